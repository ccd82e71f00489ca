//! Calls from the client commands to a coordinator, and what their failures mean. Every failure
//! is classified once, here: a lost connection or `Unavailable` may mend, so it is tried again
//! after a capped, jittered pause ([`backoff`]); a refusal (a bad token, a malformed or too large
//! request, an unknown batch) will not, so it ends the command at once with a message that says
//! what to do, and `main` gives it its own exit status ([`ExitStatus`]).

use std::future::Future;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use thiserror::Error;
use tilesolve::connect::{AuthChannel, ConnectError, ConnectOptions};
use tilesolve::proto::v1 as pb;
use tilesolve::proto::MAX_MESSAGE_BYTES;
use tonic::Code;

use crate::exit_status::ExitStatus;

pub(crate) type Client = pb::tilesolve_client::TilesolveClient<AuthChannel>;

/// A call to the coordinator that did not succeed.
#[derive(Debug, Error)]
pub enum CallError {
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("the call to the coordinator failed: {0}")]
    Lost(String),
    #[error("the coordinator refused the call: {code:?}: {message}{}", hint(*code))]
    Refused { code: Code, message: String },
}

impl From<tonic::Status> for CallError {
    fn from(status: tonic::Status) -> CallError {
        if is_transient(status.code()) {
            CallError::Lost(format!("{:?}: {}", status.code(), status.message()))
        } else {
            CallError::Refused {
                code: status.code(),
                message: status.message().to_string(),
            }
        }
    }
}

impl CallError {
    /// The error as a line logged while it is tried again: without the hint its last report
    /// gives.
    pub fn brief(&self) -> String {
        match self {
            CallError::Connect(error) => error.brief(),
            other => other.to_string(),
        }
    }

    /// Whether trying again may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            CallError::Connect(ConnectError::Unreachable { .. }) | CallError::Lost(_)
        )
    }

    pub fn exit_status(&self) -> ExitStatus {
        match self {
            CallError::Refused { .. } => ExitStatus::Refused,
            // The address or the settings to reach it are wrong: trying again cannot help.
            CallError::Connect(
                ConnectError::Address { .. }
                | ConnectError::Scheme { .. }
                | ConnectError::Token
                | ConnectError::Tls(_),
            ) => ExitStatus::BadInput,
            CallError::Connect(_) | CallError::Lost(_) => ExitStatus::Unreachable,
        }
    }
}

/// Codes that say the call did not get through (or the server could not take it now), as
/// opposed to a refusal of the call itself.
fn is_transient(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::Unknown
            | Code::Cancelled
            | Code::DeadlineExceeded
            | Code::Aborted
    )
}

/// What to do about a refusal, appended to its message.
fn hint(code: Code) -> &'static str {
    match code {
        Code::Unauthenticated => {
            " (give a token the coordinator knows with --token or TILESOLVE_TOKEN)"
        }
        Code::PermissionDenied => " (this token may not make this call: the message says who may)",
        Code::InvalidArgument => " (the request is malformed: mend what the message names)",
        Code::OutOfRange => {
            " (past one of the coordinator's limits: split the batch or ask for less)"
        }
        Code::NotFound => " (`tilesolve batches` lists the batches the coordinator holds)",
        Code::ResourceExhausted => {
            " (the coordinator is at a limit the message names: try again once it has room)"
        }
        Code::Unimplemented => {
            " (the server there is not a tilesolve coordinator of this version: check the \
             address's port, since a worker's health port answers this way, or the versions)"
        }
        _ => "",
    }
}

/// Pauses between tries: from 200 ms doubling to `max`, each plus up to as much again at
/// random, so clients that lost the coordinator together do not all come back together.
pub(crate) fn backoff(max: Duration) -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(max)
        .with_jitter()
}

/// Tries a one-shot command makes before it reports the coordinator unreachable (about 6 s).
const ONE_SHOT_TRIES: usize = 5;

/// A coordinator, connected on first use and again after a transport fault.
pub(crate) struct Coordinator {
    options: ConnectOptions,
    client: Option<Client>,
}

impl Coordinator {
    pub fn new(options: ConnectOptions) -> Coordinator {
        Coordinator {
            options,
            client: None,
        }
    }

    pub fn url(&self) -> &str {
        &self.options.url
    }

    /// The client, connecting if there is none.
    pub async fn client(&mut self) -> Result<Client, CallError> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let client = connect(&self.options).await?;
        self.client = Some(client.clone());
        Ok(client)
    }

    /// Connects, trying again after transport faults as a one-shot call does: before a call
    /// that must not be repeated, so only reaching the coordinator is retried.
    pub async fn reach(&mut self) -> Result<(), CallError> {
        let mut pauses = backoff(Duration::from_secs(2))
            .with_max_times(ONE_SHOT_TRIES)
            .build();
        loop {
            match self.client().await {
                Ok(_) => return Ok(()),
                Err(error) if error.is_transient() => match pauses.next() {
                    Some(pause) => {
                        let error = error.brief();
                        tracing::info!(%error, retry_in = ?pause, "trying the coordinator again");
                        tokio::time::sleep(pause).await;
                    }
                    None => return Err(error),
                },
                Err(error) => return Err(error),
            }
        }
    }

    /// `status` from a call made on [`Coordinator::client`] (reading a stream, say), classified;
    /// after a transport fault the next call connects again.
    pub fn failed(&mut self, status: tonic::Status) -> CallError {
        let error = CallError::from(status);
        if error.is_transient() {
            self.client = None;
        }
        error
    }

    /// Makes one call, without retrying: for calls that must not happen twice (a submission).
    pub async fn once<T, F, Fut>(&mut self, call: F) -> Result<T, CallError>
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let client = self.client().await?;
        match call(client).await {
            Ok(response) => Ok(response.into_inner()),
            Err(status) => match self.options.scheme_mismatch(&status).await {
                Some(mismatch) => Err(mismatch.into()),
                None => Err(self.failed(status)),
            },
        }
    }

    /// Makes a call that may safely be repeated, trying again after transport faults: a few
    /// times for a one-shot command, then the coordinator is reported unreachable.
    pub async fn call<T, F, Fut>(&mut self, call: F) -> Result<T, CallError>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let pauses = backoff(Duration::from_secs(2)).with_max_times(ONE_SHOT_TRIES);
        self.retry(pauses, call, |_| {}).await
    }

    /// Makes a call that may safely be repeated, trying again after transport faults for as long
    /// as it takes (Ctrl-C stops it), telling `waiting` each time: for work the coordinator has
    /// acknowledged and keeps on its disk.
    pub async fn call_until_answered<T, F, Fut>(
        &mut self,
        call: F,
        waiting: impl FnMut(&CallError),
    ) -> Result<T, CallError>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let pauses = backoff(Duration::from_secs(5)).without_max_times();
        self.retry(pauses, call, waiting).await
    }

    async fn retry<T, F, Fut>(
        &mut self,
        pauses: ExponentialBuilder,
        mut call: F,
        mut waiting: impl FnMut(&CallError),
    ) -> Result<T, CallError>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let mut pauses = pauses.build();
        loop {
            let error = match self.once(&mut call).await {
                Ok(answer) => return Ok(answer),
                Err(error) if error.is_transient() => error,
                Err(error) => return Err(error),
            };
            let Some(pause) = pauses.next() else {
                return Err(error);
            };
            let brief = error.brief();
            tracing::info!(error = %brief, retry_in = ?pause, "trying the coordinator again");
            waiting(&error);
            tokio::time::sleep(pause).await;
        }
    }
}

/// A client of the coordinator at `options`, allowing messages as large as the coordinator's.
pub(crate) async fn connect(options: &ConnectOptions) -> Result<Client, CallError> {
    let channel = options.connect().await?;
    Ok(pb::tilesolve_client::TilesolveClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_stop_and_transport_faults_are_retried() {
        for code in [
            Code::Unauthenticated,
            Code::PermissionDenied,
            Code::InvalidArgument,
            Code::OutOfRange,
            Code::NotFound,
            Code::ResourceExhausted,
            Code::FailedPrecondition,
        ] {
            let error = CallError::from(tonic::Status::new(code, "no"));
            assert!(!error.is_transient(), "{code:?}");
            assert_eq!(error.exit_status(), ExitStatus::Refused);
        }
        let lost = CallError::from(tonic::Status::unavailable("gone"));
        assert!(lost.is_transient());
        assert_eq!(lost.exit_status(), ExitStatus::Unreachable);
    }

    #[test]
    fn pauses_grow_to_the_cap_and_one_shot_tries_end() {
        let pauses: Vec<Duration> = backoff(Duration::from_secs(2))
            .with_max_times(ONE_SHOT_TRIES)
            .build()
            .collect();
        assert_eq!(pauses.len(), ONE_SHOT_TRIES);
        // Jitter adds at most as much again as the pause itself.
        assert!(
            pauses.iter().all(|p| *p <= Duration::from_secs(4)),
            "{pauses:?}"
        );
        assert!(pauses[0] >= Duration::from_millis(200), "{pauses:?}");
    }
}
