//! Completion notices: when a batch that asked for one (`submit --notify URL`, or the
//! coordinator's `--notify-url`) ends, whichever way, a JSON document is POSTed to its URL,
//! signed with HMAC-SHA256 under its owner's `notify_secret` (or the coordinator's
//! `--notify-secret` for the operator's batches) in `X-Tilesolve-Signature: sha256=<hex>`.
//!
//! Delivery is at least once and apart from the scheduler: the notice is stored as the batch
//! ends (`store::PendingNotice`, with the batch's record), and this loop, outside the
//! scheduler's lock, sends what is due one at a time. A receiver that fails (refused, no
//! answer in 10 s, a status other than 2xx) is tried again after 1, 2, 4, ... s, at most
//! [`MOST_DELAY`], each delay cut by a random share of up to half so that many notices do not
//! come back at once; after [`MOST_ATTEMPTS`] the notice is dropped and logged. A restart
//! finds the notices still due in the store.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::owners::Owners;
use crate::scheduler::BatchProgress;
use crate::service::Service;
use crate::store::{OwnerNodes, PendingNotice};

/// Attempts before a notice is dropped: about 80 minutes of trying.
pub const MOST_ATTEMPTS: u32 = 20;
/// The longest wait between two attempts.
pub const MOST_DELAY: Duration = Duration::from_secs(300);
/// How long a receiver has to answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// How often the store is looked at for notices due.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// Counts since the coordinator started, for `/metrics`.
#[derive(Debug, Default)]
pub struct NoticeCounts {
    pub delivered: AtomicU64,
    pub failed_attempts: AtomicU64,
    pub dropped: AtomicU64,
}

/// How the coordinator sends notices.
#[derive(Clone, Debug, Default)]
pub struct NoticeSettings {
    /// Signs the notices of the operator's batches, and of owners without a secret of their
    /// own.
    pub secret: Option<String>,
}

/// The body's signature: HMAC-SHA256 of `body` under `secret`, in hex.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    ring::hmac::sign(&key, body)
        .as_ref()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The document a notice carries.
fn document(notice: &PendingNotice, progress: Option<&BatchProgress>) -> serde_json::Value {
    let mut document = serde_json::json!({
        "event": "batch.ended",
        "batch": notice.batch,
        "ended_unix_ms": notice.ended_unix_ms,
        "attempt": notice.attempts + 1,
    });
    if let Some(p) = progress {
        let figures = serde_json::json!({
            "state": p.state(),
            "owner": p.owner.as_ref().map(|o| o.to_string()),
            "total": p.total,
            "solved": p.solved,
            "failed": p.failed,
            "bounded": p.bounded,
            "cancelled": p.items_cancelled,
            "nodes": p.nodes,
            "seconds": p.seconds,
            "submitted_unix_ms": p.submitted_unix_ms,
            "priority": p.priority.get(),
            "retry_of": p.retry_of,
        });
        if let (Some(document), Some(figures)) = (document.as_object_mut(), figures.as_object()) {
            document.extend(figures.clone());
        }
    }
    document
}

/// Sends notices as they fall due, for the rest of the process's life.
pub async fn deliver(
    service: Service,
    owners: Owners,
    settings: NoticeSettings,
    counts: Arc<NoticeCounts>,
) {
    let mut tick = tokio::time::interval(LOOK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let agent = ureq::AgentBuilder::new().timeout(ANSWER_WITHIN).build();
    loop {
        tick.tick().await;
        let due = match service.store().pending_notices() {
            Ok(pending) => pending,
            Err(error) => {
                tracing::error!(%error, "reading the notices due");
                continue;
            }
        };
        let now = OwnerNodes::now_unix_ms();
        for notice in due.into_iter().filter(|n| n.next_unix_ms <= now) {
            let progress = service.read(|s| s.progress(notice.batch)).ok();
            let secret = progress
                .as_ref()
                .and_then(|p| p.owner.as_ref())
                .and_then(|owner| owners.named(owner))
                .and_then(|owner| owner.notify_secret.map(|s| s.to_string()))
                .or_else(|| settings.secret.clone());
            let body = document(&notice, progress.as_ref()).to_string();
            let (agent, url) = (agent.clone(), notice.url.clone());
            let sent = tokio::task::spawn_blocking(move || send(&agent, &url, &body, secret))
                .await
                .unwrap_or_else(|error| Err(error.to_string()));
            if let Err(error) = settle(&service, &counts, notice, sent) {
                tracing::error!(%error, "keeping a notice's outcome");
            }
        }
    }
}

/// POSTs `body` to `url`, signed with `secret` if there is one.
fn send(agent: &ureq::Agent, url: &str, body: &str, secret: Option<String>) -> Result<(), String> {
    let mut request = agent.post(url).set("Content-Type", "application/json").set(
        "User-Agent",
        concat!("tilesolve/", env!("CARGO_PKG_VERSION")),
    );
    if let Some(secret) = secret {
        let signed = format!("sha256={}", signature(&secret, body.as_bytes()));
        request = request.set("X-Tilesolve-Signature", &signed);
    }
    match request.send_string(body) {
        Ok(_) => Ok(()),
        Err(ureq::Error::Status(code, _)) => Err(format!("the receiver answered {code}")),
        Err(error) => Err(error.to_string()),
    }
}

/// Forgets a delivered notice, or keeps a failed one for its next attempt (or drops it after
/// its last).
fn settle(
    service: &Service,
    counts: &NoticeCounts,
    notice: PendingNotice,
    sent: Result<(), String>,
) -> Result<(), crate::store::StoreError> {
    let store = service.store();
    let batch = notice.batch;
    match sent {
        Ok(()) => {
            counts.delivered.fetch_add(1, Ordering::Relaxed);
            tracing::info!(batch, url = %notice.url, attempts = notice.attempts + 1, "notice delivered");
            store.remove_notice(batch)
        }
        Err(reason) if notice.attempts + 1 >= MOST_ATTEMPTS => {
            counts.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::error!(batch, url = %notice.url, %reason, attempts = MOST_ATTEMPTS, "notice dropped: its receiver never took it");
            store.remove_notice(batch)
        }
        Err(reason) => {
            counts.failed_attempts.fetch_add(1, Ordering::Relaxed);
            let attempts = notice.attempts + 1;
            let delay = retry_delay(attempts, jitter());
            tracing::warn!(batch, url = %notice.url, %reason, attempts, retry_in = ?delay, "notice not delivered: trying again");
            store.put_notice(&PendingNotice {
                attempts,
                next_unix_ms: OwnerNodes::now_unix_ms() + delay.as_millis() as u64,
                ..notice
            })
        }
    }
}

/// The wait after `attempts` failed attempts: 1, 2, 4, ... s, at most [`MOST_DELAY`], cut by
/// `jitter` (0 to 1) times half.
pub fn retry_delay(attempts: u32, jitter: f64) -> Duration {
    let full = Duration::from_secs(1u64 << attempts.saturating_sub(1).min(16)).min(MOST_DELAY);
    full.mul_f64(1.0 - 0.5 * jitter.clamp(0.0, 1.0))
}

/// A random share, 0 to 1.
fn jitter() -> f64 {
    let mut bytes = [0u8; 2];
    match getrandom::getrandom(&mut bytes) {
        Ok(()) => f64::from(u16::from_le_bytes(bytes)) / f64::from(u16::MAX),
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231's test case 2: key "Jefe", data "what do ya want for nothing?".
    #[test]
    fn the_signature_is_hmac_sha256_in_hex() {
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn retries_double_to_a_cap_and_jitter_cuts_at_most_half() {
        assert_eq!(retry_delay(1, 0.0), Duration::from_secs(1));
        assert_eq!(retry_delay(4, 0.0), Duration::from_secs(8));
        assert_eq!(retry_delay(12, 0.0), MOST_DELAY);
        assert_eq!(retry_delay(4, 1.0), Duration::from_secs(4));
        assert_eq!(retry_delay(40, 0.0), MOST_DELAY);
    }
}
