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
    /// The tokens that open this API; none lets every call in.
    tokens: Vec<Arc<str>>,
    /// Which token this is and where it is set, for the refusal's message.
    role: &'static str,
    /// The other API's tokens, when they differ: a caller sending one is known but may not
    /// make this call (PermissionDenied), where a wrong or missing token is Unauthenticated.
    other: Vec<Arc<str>>,
    other_role: &'static str,
}

/// The index of the token a call to the worker API presented (0 when it has no token of its
/// own), in the request's extensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenIndex(pub usize);

const CLIENT_ROLE: &str = "client token (--token or TILESOLVE_TOKEN)";
const WORKER_ROLE: &str = "worker token (--worker-token or TILESOLVE_WORKER_TOKEN)";

impl TokenCheck {
    /// The check of the client API: `None` lets every call in (for a coordinator bound to
    /// 127.0.0.1 on a trusted machine).
    pub fn client(token: Option<&str>, worker_tokens: &[String]) -> TokenCheck {
        TokenCheck {
            tokens: token.map(Arc::from).into_iter().collect(),
            role: CLIENT_ROLE,
            other: worker_tokens
                .iter()
                .map(|t| Arc::from(t.as_str()))
                .collect(),
            other_role: WORKER_ROLE,
        }
    }

    /// The check of the worker API: any of the worker tokens, or the client token when there
    /// are none.
    pub fn worker(worker_tokens: &[String], client_token: Option<&str>) -> TokenCheck {
        if worker_tokens.is_empty() {
            return TokenCheck::client(client_token, &[]);
        }
        TokenCheck {
            tokens: worker_tokens
                .iter()
                .map(|t| Arc::from(t.as_str()))
                .collect(),
            role: WORKER_ROLE,
            other: client_token.map(Arc::from).into_iter().collect(),
            other_role: CLIENT_ROLE,
        }
    }
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if self.tokens.is_empty() {
            request.extensions_mut().insert(TokenIndex(0));
            return Ok(request);
        }
        if let Some(index) = self
            .tokens
            .iter()
            .position(|token| token_matches(request.metadata(), token))
        {
            request.extensions_mut().insert(TokenIndex(index));
            return Ok(request);
        }
        let peer = request.remote_addr();
        if self
            .other
            .iter()
            .any(|other| token_matches(request.metadata(), other))
        {
            tracing::warn!(
                ?peer,
                sent = self.other_role,
                role = self.role,
                "refused a call made with the other API's token"
            );
            return Err(Status::permission_denied(format!(
                "this call needs the coordinator's {}, and was made with its {}",
                self.role, self.other_role
            )));
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
