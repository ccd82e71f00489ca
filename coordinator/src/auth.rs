//! Who may call: with a token configured, every call to the client and worker APIs (and to
//! reflection) must carry `authorization: Bearer <token>`; others are refused as Unauthenticated
//! and logged with the caller's address. gRPC health stays open so load balancers and probes
//! can check liveness without the secret.
//!
//! Two roles, two tokens: the client token opens the client API, reflection and the dashboard;
//! the worker token (when one is set) opens the worker API and nothing else, so a worker host
//! that is broken into cannot read or submit batches, and a client cannot register as a worker
//! and report answers. Without a worker token, workers use the client token.

use std::sync::Arc;

use tilesolve::connect::{token_matches, AUTHORIZATION};
use tonic::{Request, Status};

#[derive(Clone, Debug)]
pub struct TokenCheck {
    token: Option<Arc<str>>,
    /// Which token this is and where it is set, for the refusal's message.
    role: &'static str,
}

impl TokenCheck {
    /// The check of the client API: `None` lets every call in (for a coordinator bound to
    /// 127.0.0.1 on a trusted machine).
    pub fn client(token: Option<&str>) -> TokenCheck {
        TokenCheck {
            token: token.map(Arc::from),
            role: "client token (--token or TILESOLVE_TOKEN)",
        }
    }

    /// The check of the worker API: the worker token, or the client token when there is none.
    pub fn worker(worker_token: Option<&str>, client_token: Option<&str>) -> TokenCheck {
        match worker_token {
            Some(token) => TokenCheck {
                token: Some(Arc::from(token)),
                role: "worker token (--worker-token or TILESOLVE_WORKER_TOKEN)",
            },
            None => TokenCheck::client(client_token),
        }
    }
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(token) = &self.token else {
            return Ok(request);
        };
        if token_matches(request.metadata(), token) {
            return Ok(request);
        }
        let reason = if request.metadata().contains_key(AUTHORIZATION) {
            "wrong token"
        } else {
            "no token"
        };
        tracing::warn!(peer = ?request.remote_addr(), reason, role = self.role, "refused a call");
        Err(Status::unauthenticated(format!(
            "{reason}: this call needs the coordinator's {}",
            self.role
        )))
    }
}
