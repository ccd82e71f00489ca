//! How clients and workers reach a coordinator: the address, an optional bearer token sent with
//! every call, and TLS (rustls) when the address is `https://`. The coordinator checks the same
//! token with [`token_matches`], so both sides agree on one header format.

use std::time::Duration;

use thiserror::Error;
use tonic::metadata::{AsciiMetadataValue, MetadataMap};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Request, Status};

/// The header that carries `Bearer <token>`.
pub const AUTHORIZATION: &str = "authorization";

/// Where a coordinator is and how to prove who we are to it.
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    /// e.g. `http://127.0.0.1:7411`, or `https://coordinator.example:7411` for TLS.
    pub url: String,
    /// Sent as `authorization: Bearer <token>` with every call.
    pub token: Option<String>,
    /// PEM certificate(s) of the authority that signed the coordinator's certificate; without
    /// it an `https://` address is checked against the public web roots.
    pub ca_pem: Option<Vec<u8>>,
    /// The name the coordinator's certificate must carry, when it is not the address's host.
    pub tls_domain: Option<String>,
}

#[derive(Debug, Error)]
pub enum ConnectError {
    #[error("coordinator address '{url}': {reason}")]
    Address { url: String, reason: String },
    /// `http://` to a coordinator that serves TLS, or `https://` to one that does not.
    #[error("coordinator address '{url}': {reason}")]
    Scheme { url: String, reason: String },
    #[error("the token cannot be sent in a gRPC header: it must be printable ASCII")]
    Token,
    #[error("TLS settings: {0}")]
    Tls(String),
    /// `hint` says what to do, when the reason says something can be done (empty otherwise).
    #[error("connecting to the coordinator at {url}: {reason}{hint}")]
    Unreachable {
        url: String,
        reason: String,
        hint: &'static str,
    },
}

impl ConnectError {
    /// The error without its hint: for lines logged while it is tried again, so that the hint
    /// is said once, with the error that ends the command.
    pub fn brief(&self) -> String {
        match self {
            ConnectError::Unreachable { url, reason, .. } => format!("{url}: {reason}"),
            other => other.to_string(),
        }
    }
}

/// Adds the bearer token (if any) to every outgoing call, and the caller's trace context when
/// traces are exported ([`crate::trace_context`]).
#[derive(Clone, Debug)]
pub struct BearerToken(Option<AsciiMetadataValue>);

impl tonic::service::Interceptor for BearerToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert(AUTHORIZATION, value.clone());
        }
        if let Some(value) = crate::trace_context::current().and_then(|t| t.parse().ok()) {
            request
                .metadata_mut()
                .insert(crate::trace_context::TRACEPARENT, value);
        }
        Ok(request)
    }
}

/// A channel to the coordinator with the token added to every call.
pub type AuthChannel = InterceptedService<Channel, BearerToken>;

impl ConnectOptions {
    pub fn new(url: impl Into<String>) -> ConnectOptions {
        ConnectOptions {
            url: url.into(),
            ..ConnectOptions::default()
        }
    }

    /// The interceptor that sends this token.
    pub fn bearer(&self) -> Result<BearerToken, ConnectError> {
        self.token
            .as_ref()
            .map(|token| format!("Bearer {token}").parse::<AsciiMetadataValue>())
            .transpose()
            .map(BearerToken)
            .map_err(|_| ConnectError::Token)
    }

    fn endpoint(&self) -> Result<Endpoint, ConnectError> {
        let bad = |reason: String| ConnectError::Address {
            url: self.url.clone(),
            reason,
        };
        if !["http://", "https://"]
            .iter()
            .any(|scheme| self.url.len() > scheme.len() && self.url.starts_with(scheme))
        {
            return Err(bad(
                "an address is http://HOST:PORT, or https://HOST:PORT for TLS (e.g. http://127.0.0.1:7411)".into(),
            ));
        }
        // Keep-alive pings find a dead peer (a pulled cable, a killed host) within seconds
        // instead of leaving a worker waiting on a connection nobody will answer.
        let mut endpoint = Endpoint::from_shared(self.url.clone())
            .map_err(|e| bad(e.to_string()))?
            .connect_timeout(Duration::from_secs(5))
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(20))
            .keep_alive_while_idle(true)
            .tcp_keepalive(Some(Duration::from_secs(30)));
        let https = self.url.starts_with("https://");
        if !https && (self.ca_pem.is_some() || self.tls_domain.is_some()) {
            return Err(bad(
                "TLS options were given but the address is not https://".into(),
            ));
        }
        if https {
            let mut tls = ClientTlsConfig::new();
            tls = match &self.ca_pem {
                Some(pem) => tls.ca_certificate(Certificate::from_pem(pem)),
                None => tls.with_webpki_roots(),
            };
            if let Some(domain) = &self.tls_domain {
                tls = tls.domain_name(domain.clone());
            }
            endpoint = endpoint
                .tls_config(tls)
                .map_err(|e| ConnectError::Tls(e.to_string()))?;
        }
        Ok(endpoint)
    }

    /// Connects now (so an unreachable coordinator is reported at once).
    pub async fn connect(&self) -> Result<AuthChannel, ConnectError> {
        let bearer = self.bearer()?;
        let channel = self.endpoint()?.connect().await.map_err(|e| {
            let reason = error_chain(&e);
            let url = self.url.clone();
            // What each failure means and what to do; the TLS ones are settings to mend, not
            // faults that pass, so they are not tried again.
            if reason.contains("InvalidContentType") {
                // rustls read a record that is not TLS: the coordinator there speaks HTTP/2.
                ConnectError::Scheme {
                    url,
                    reason: "the coordinator there does not speak TLS: use http://".into(),
                }
            } else if reason.contains("UnknownIssuer") || reason.contains("unknown issuer") {
                ConnectError::Tls(format!(
                    "the certificate of {url} is signed by an authority this host does not \
                     trust: give that authority's certificate with --tls-ca (or \
                     TILESOLVE_TLS_CA)"
                ))
            } else if reason.contains("NotValidForName") || reason.contains("not valid for name") {
                ConnectError::Tls(format!(
                    "the certificate of {url} does not name the host it was reached as: give \
                     a name it holds with --tls-domain (or TILESOLVE_TLS_DOMAIN), or reach it \
                     by that name"
                ))
            } else {
                let hint = match reason.contains("Connection refused") {
                    true => {
                        " (nothing accepts connections there: is the coordinator running, and \
                         on this port? `tilesolve serve` listens on 127.0.0.1:7411 unless \
                         --listen says otherwise)"
                    }
                    false => "",
                };
                ConnectError::Unreachable { url, reason, hint }
            }
        })?;
        Ok(InterceptedService::new(channel, bearer))
    }

    /// What a failed call means when it is an `http://` address answered by a TLS server: such a
    /// call fails with a bare HTTP/2 protocol error. Then the address is asked again, once, with
    /// the HTTP/2 preface, and a TLS alert record in answer (0x15, then version 3) names the
    /// mistake.
    pub async fn scheme_mismatch(&self, status: &Status) -> Option<ConnectError> {
        if status.code() != tonic::Code::Internal || !status.message().contains("h2 protocol error")
        {
            return None;
        }
        let authority = self.url.strip_prefix("http://")?.split('/').next()?;
        answers_with_tls(authority)
            .await
            .then(|| ConnectError::Scheme {
                url: self.url.clone(),
                reason: "the coordinator there speaks TLS: use https:// (and --tls-ca with the \
                     certificate of the authority that signed its certificate)"
                    .into(),
            })
    }
}

/// Whether the server at `authority` (host:port) answers the HTTP/2 preface with a TLS alert.
async fn answers_with_tls(authority: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(authority).await.ok()?;
        stream
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .ok()?;
        let mut first = [0u8; 2];
        stream.read_exact(&mut first).await.ok()?;
        Some(first == [0x15, 0x03])
    };
    tokio::time::timeout(Duration::from_secs(2), probe)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// An error with its causes, which is where transport errors say what actually went wrong
/// (refused connection, unknown certificate authority, ...).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Whether a call's metadata carries `Bearer <expected>`. Compares in time independent of where
/// the first difference is, so the token cannot be guessed byte by byte from response times.
pub fn token_matches(metadata: &MetadataMap, expected: &str) -> bool {
    bearer(metadata).is_some_and(|given| same_secret(given, expected))
}

/// The token `metadata` carries as `authorization: Bearer <token>`, if any.
pub fn bearer(metadata: &MetadataMap) -> Option<&str> {
    metadata
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
}

/// Whether `given` equals `expected`, compared in time independent of where the first
/// difference is (for tokens and worker secrets), by the `subtle` crate. Only the length can
/// show through timing, and it is no secret: tokens are made long and random.
pub fn same_secret(given: &str, expected: &str) -> bool {
    use subtle::ConstantTimeEq;
    given.as_bytes().ct_eq(expected.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_matches() {
        let mut metadata = MetadataMap::new();
        assert!(!token_matches(&metadata, "secret"));
        for (sent, ok) in [
            ("Bearer secret", true),
            ("Bearer secre", false),
            ("Bearer secrets", false),
            ("bearer secret", false),
            ("secret", false),
            ("Bearer ", false),
        ] {
            metadata.insert(AUTHORIZATION, sent.parse().unwrap());
            assert_eq!(token_matches(&metadata, "secret"), ok, "{sent}");
        }
    }

    #[test]
    fn tls_options_need_an_https_address() {
        let options = ConnectOptions {
            ca_pem: Some(b"x".to_vec()),
            ..ConnectOptions::new("http://127.0.0.1:1")
        };
        assert!(matches!(
            options.endpoint(),
            Err(ConnectError::Address { .. })
        ));
        let bad_token = ConnectOptions {
            token: Some("line\nbreak".into()),
            ..ConnectOptions::new("http://127.0.0.1:1")
        };
        assert!(matches!(bad_token.bearer(), Err(ConnectError::Token)));
    }
}
