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
//!
//! With an owners file ([`crate::owners`]) the client API also opens to each owner's token;
//! the check puts the [`Caller`] in the request's extensions, and the services check its role
//! and limits. Owner tokens never open the worker API.

use std::sync::Arc;

use tilesolve::connect::{bearer, token_matches, AUTHORIZATION};
use tonic::metadata::MetadataMap;
use tonic::{Request, Status};

use crate::owners::{Caller, Owners};

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
    /// The owners whose tokens also open this API (the client API's only).
    owners: Owners,
}

/// The index of the token a call to the worker API presented (0 when it has no token of its
/// own), in the request's extensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenIndex(pub usize);

const CLIENT_ROLE: &str = "client token (--token or TILESOLVE_TOKEN)";
const WORKER_ROLE: &str = "worker token (--worker-token or TILESOLVE_WORKER_TOKEN)";

impl TokenCheck {
    /// The check of the client API: `None` and no owners let every call in (for a coordinator
    /// bound to 127.0.0.1 on a trusted machine).
    pub fn client(token: Option<&str>, worker_tokens: &[String], owners: Owners) -> TokenCheck {
        TokenCheck {
            owners,
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
            return TokenCheck::client(client_token, &[], Owners::none());
        }
        TokenCheck {
            owners: Owners::none(),
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

impl TokenCheck {
    /// Whether every call is let in (no token, no owners).
    pub fn is_open(&self) -> bool {
        self.tokens.is_empty() && !self.owners.configured()
    }

    /// The owners whose tokens this check knows.
    pub fn owners(&self) -> &Owners {
        &self.owners
    }

    /// Who a call carrying `metadata` comes from, or why it is refused. Also returns the index
    /// of the coordinator token it carried (0 for none, or an owner's).
    pub fn caller(&self, metadata: &MetadataMap) -> Result<(Caller, TokenIndex), Refusal> {
        if self.is_open() {
            return Ok((Caller::OPERATOR, TokenIndex(0)));
        }
        if let Some(index) = self
            .tokens
            .iter()
            .position(|token| token_matches(metadata, token))
        {
            return Ok((Caller::OPERATOR, TokenIndex(index)));
        }
        if let Some(owner) = bearer(metadata).and_then(|token| self.owners.find(token)) {
            return Ok((Caller { owner: Some(owner) }, TokenIndex(0)));
        }
        if self
            .other
            .iter()
            .any(|other| token_matches(metadata, other))
        {
            return Err(Refusal::OtherApi);
        }
        Err(match metadata.contains_key(AUTHORIZATION) {
            true => Refusal::WrongToken,
            false => Refusal::NoToken,
        })
    }

    /// What the API needs, in a refusal: its token, or an owner's.
    fn needs(&self) -> String {
        match (self.tokens.is_empty(), self.owners.configured()) {
            (false, true) => format!(
                "the coordinator's {} or an owner's token (--owners)",
                self.role
            ),
            (true, true) => "an owner's token (--owners)".to_string(),
            _ => format!("the coordinator's {}", self.role),
        }
    }

    /// The refusal as a status: PermissionDenied for the other API's token, else
    /// Unauthenticated.
    pub fn refusal_status(&self, refusal: Refusal) -> Status {
        match refusal {
            Refusal::OtherApi => Status::permission_denied(format!(
                "this call needs {}, and was made with the coordinator's {}",
                self.needs(),
                self.other_role
            )),
            Refusal::WrongToken | Refusal::NoToken => Status::unauthenticated(format!(
                "{}: this call needs {}",
                refusal.reason(),
                self.needs()
            )),
        }
    }
}

/// Why a call was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    NoToken,
    WrongToken,
    /// It carried the other API's token.
    OtherApi,
}

impl Refusal {
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::NoToken => "no token",
            Refusal::WrongToken => "wrong token",
            Refusal::OtherApi => "the other API's token",
        }
    }
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        match self.caller(request.metadata()) {
            Ok((caller, index)) => {
                request.extensions_mut().insert(index);
                request.extensions_mut().insert(caller);
                Ok(request)
            }
            Err(refusal) => {
                let peer = request.remote_addr();
                match refusal {
                    Refusal::OtherApi => tracing::warn!(
                        ?peer,
                        sent = self.other_role,
                        role = self.role,
                        "refused a call made with the other API's token"
                    ),
                    _ => tracing::warn!(
                        ?peer,
                        reason = refusal.reason(),
                        role = self.role,
                        "refused a call"
                    ),
                }
                Err(self.refusal_status(refusal))
            }
        }
    }
}
