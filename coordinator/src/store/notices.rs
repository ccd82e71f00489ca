//! The `notices` tree: completion notices waiting to be delivered, one per ended batch that
//! asked for one, written as the batch ends (with its record) and removed once its receiver
//! took it or its attempts ran out. A restart finds them here and delivers them.

use serde::{Deserialize, Serialize};

use super::format::{batch_key, decode, encode};
use super::{Store, StoreError};

/// A notice of a batch's end, to POST to `url`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingNotice {
    pub batch: u64,
    pub url: String,
    /// When the batch ended (ms since 1970).
    pub ended_unix_ms: u64,
    /// Attempts made so far.
    pub attempts: u32,
    /// Not to be tried before this (ms since 1970).
    pub next_unix_ms: u64,
}

impl PendingNotice {
    /// Whether `url` is one a notice can be sent to: `http://` or `https://` and a host, at
    /// most 2,048 bytes; the reason names it otherwise.
    pub fn check_url(url: &str) -> Result<(), String> {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| format!("notify URL '{url:.80}' is neither http:// nor https://"))?;
        if rest.is_empty()
            || rest.starts_with('/')
            || url.len() > 2048
            || url.contains(char::is_whitespace)
        {
            return Err(format!(
                "notify URL '{url:.80}' names no host, or is too long"
            ));
        }
        Ok(())
    }
}

impl Store {
    /// Keeps `notice` (a new one, or one whose attempt failed, with its next time).
    pub fn put_notice(&self, notice: &PendingNotice) -> Result<(), StoreError> {
        self.notices
            .insert(batch_key(notice.batch), encode(notice))?;
        Ok(())
    }

    /// Forgets batch `batch`'s notice (delivered, or given up).
    pub fn remove_notice(&self, batch: u64) -> Result<(), StoreError> {
        self.notices.remove(batch_key(batch))?;
        Ok(())
    }

    /// Every notice waiting, in batch order. A damaged record costs only itself: it is
    /// logged and removed, and the others are delivered.
    pub fn pending_notices(&self) -> Result<Vec<PendingNotice>, StoreError> {
        let mut pending = Vec::new();
        for entry in self.notices.iter() {
            let (key, bytes) = entry?;
            match decode("notices", &bytes) {
                Ok(notice) => pending.push(notice),
                Err(error) => {
                    tracing::error!(%error, "a damaged completion notice was dropped");
                    self.notices.remove(key)?;
                }
            }
        }
        Ok(pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_notice_costs_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let notice = |batch| PendingNotice {
            batch,
            url: "http://127.0.0.1:9/".into(),
            ended_unix_ms: 1,
            attempts: 0,
            next_unix_ms: 1,
        };
        store.put_notice(&notice(1)).unwrap();
        store.put_notice(&notice(3)).unwrap();
        store
            .notices
            .insert(batch_key(2), &b"{not json"[..])
            .unwrap();
        assert_eq!(store.pending_notices().unwrap(), vec![notice(1), notice(3)]);
        assert_eq!(store.notices.len(), 2, "the damaged record is gone");
    }

    #[test]
    fn only_http_urls_with_a_host_are_taken() {
        assert!(PendingNotice::check_url("http://127.0.0.1:9/hook").is_ok());
        assert!(PendingNotice::check_url("https://hooks.example/x?y=1").is_ok());
        for bad in [
            "ftp://x",
            "http://",
            "http:///path",
            "example.com/hook",
            "http://a b",
        ] {
            assert!(PendingNotice::check_url(bad).is_err(), "{bad}");
        }
    }
}
