//! Who may call: with a token configured, every call to the client and worker APIs (and to
//! reflection) must carry `authorization: Bearer <token>`; others are refused as Unauthenticated
//! (PermissionDenied when they carry the other API's token) and logged with the caller's
//! address. gRPC health stays open so load balancers and probes
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
    /// The other API's token, when it differs: a caller sending it is known but may not make
    /// this call (PermissionDenied), where a wrong or missing token is Unauthenticated.
    other: Option<(Arc<str>, &'static str)>,
}

const CLIENT_ROLE: &str = "client token (--token or TILESOLVE_TOKEN)";
const WORKER_ROLE: &str = "worker token (--worker-token or TILESOLVE_WORKER_TOKEN)";

impl TokenCheck {
    /// The check of the client API: `None` lets every call in (for a coordinator bound to
    /// 127.0.0.1 on a trusted machine).
    pub fn client(token: Option<&str>, worker_token: Option<&str>) -> TokenCheck {
        TokenCheck {
            token: token.map(Arc::from),
            role: CLIENT_ROLE,
            other: worker_token.map(|t| (Arc::from(t), WORKER_ROLE)),
        }
    }

    /// The check of the worker API: the worker token, or the client token when there is none.
    pub fn worker(worker_token: Option<&str>, client_token: Option<&str>) -> TokenCheck {
        match worker_token {
            Some(token) => TokenCheck {
                token: Some(Arc::from(token)),
                role: WORKER_ROLE,
                other: client_token.map(|t| (Arc::from(t), CLIENT_ROLE)),
            },
            None => TokenCheck::client(client_token, None),
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
        let peer = request.remote_addr();
        if let Some((other, other_role)) = &self.other {
            if token_matches(request.metadata(), other) {
                tracing::warn!(
                    ?peer,
                    sent = other_role,
                    role = self.role,
                    "refused a call made with the other API's token"
                );
                return Err(Status::permission_denied(format!(
                    "this call needs the coordinator's {}, and was made with its {other_role}",
                    self.role
                )));
            }
        }
        let reason = if request.metadata().contains_key(AUTHORIZATION) {
            "wrong token"
        } else {
            "no token"
        };
        tracing::warn!(?peer, reason, role = self.role, "refused a call");
        Err(Status::unauthenticated(format!(
            "{reason}: this call needs the coordinator's {}",
            self.role
        )))
    }
}
