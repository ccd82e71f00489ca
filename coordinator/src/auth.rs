//! Who may call: with a token configured, every call to the client and worker APIs (and to
//! reflection) must carry `authorization: Bearer <token>`; others are refused as Unauthenticated
//! and logged with the caller's address. gRPC health stays open so load balancers and probes
//! can check liveness without the secret.

use std::sync::Arc;

use tilesolve::connect::{token_matches, AUTHORIZATION};
use tonic::{Request, Status};

#[derive(Clone, Debug)]
pub struct TokenCheck {
    token: Option<Arc<str>>,
}

impl TokenCheck {
    /// `None` lets every call in (for a coordinator bound to 127.0.0.1 on a trusted machine).
    pub fn new(token: Option<&str>) -> TokenCheck {
        TokenCheck {
            token: token.map(Arc::from),
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
        tracing::warn!(peer = ?request.remote_addr(), reason, "refused a call");
        Err(Status::unauthenticated(format!(
            "{reason}: this coordinator needs its token (--token or TILESOLVE_TOKEN)"
        )))
    }
}
