//! Who shares the coordinator: the owners file (`serve --owners FILE`) names each client token's
//! owner, role and limits. Only the SHA-256 of a token is written there (`tilesolve hash-token`
//! prints it), so the file can be read by more people than may submit. The file is read at
//! start and again on SIGHUP or when it changes ([`Owners::reload`]); a file that fails to
//! read or parse keeps the owners in force, and says why.
//!
//! ```toml
//! [[owner]]
//! name = "alice"
//! role = "submit"              # admin | submit | read
//! token_sha256 = "9f86d0..."   # tilesolve hash-token < alice.token
//! max_running_batches = 2      # limits are optional
//! max_pending_boards = 10000
//! max_nodes_per_day = 1000000000000
//! notify_secret = "..."        # signs the owner's completion notices (HMAC-SHA256)
//! ```
//!
//! Roles: `read` watches, lists, reads results, queries and exports; `submit` also submits,
//! and cancels and retries its own batches; `admin` may do all of it to any batch, and prune.
//! The coordinator's own `--token` stays what it was: an admin that owns nothing.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// An owner's name: 1 to 64 of `A-Z a-z 0-9 _ . -` (it is a metrics label and a URL part).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct OwnerName(Arc<str>);

impl OwnerName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for OwnerName {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
        if name.is_empty() || name.len() > 64 || !name.chars().all(allowed) {
            return Err(format!(
                "'{name:.70}' is not an owner name: 1 to 64 letters, digits, '_', '.' or '-'"
            ));
        }
        Ok(OwnerName(Arc::from(name)))
    }
}

impl From<OwnerName> for String {
    fn from(name: OwnerName) -> String {
        name.0.to_string()
    }
}

impl fmt::Display for OwnerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a caller may do; each role may do what the ones below it may.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Read,
    Submit,
    Admin,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Submit => "submit",
            Role::Admin => "admin",
        }
    }
}

/// What one owner may have at once, or spend in a day; None: no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnerLimits {
    /// Batches submitted and not yet ended (queued or running).
    pub running_batches: Option<u64>,
    /// Items of those batches not yet ended, counting the batch being submitted.
    pub pending_boards: Option<u64>,
    /// Nodes searched for the owner's batches since midnight UTC.
    pub nodes_per_day: Option<u64>,
}

/// One named owner of client tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub name: OwnerName,
    pub role: Role,
    pub limits: OwnerLimits,
    /// The key its batches' completion notices are signed with (HMAC-SHA256).
    pub notify_secret: Option<Arc<str>>,
}

/// Who made a call: an owner from the owners file, or the operator (the `--token`, or anyone
/// when the coordinator has no token), who is an admin and owns nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub owner: Option<Owner>,
}

impl Caller {
    pub const OPERATOR: Caller = Caller { owner: None };

    pub fn role(&self) -> Role {
        self.owner.as_ref().map_or(Role::Admin, |owner| owner.role)
    }

    pub fn name(&self) -> Option<&OwnerName> {
        self.owner.as_ref().map(|owner| &owner.name)
    }

    /// Whether the caller may `act` on a batch owned by `owner`: an admin on any; a submitter
    /// on its own.
    pub fn may_change(&self, owner: Option<&OwnerName>) -> bool {
        self.role() == Role::Admin || (self.role() == Role::Submit && self.name() == owner)
    }

    /// Who the caller is, in a refusal.
    pub fn describe(&self) -> String {
        match &self.owner {
            Some(owner) => format!("owner {} (role {})", owner.name, owner.role.name()),
            None => "the operator".to_string(),
        }
    }
}

#[derive(Debug, Error)]
pub enum OwnersError {
    #[error("owners file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("owners file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("owners file {path}, owner {index} ({name}): {problem}")]
    Entry {
        path: PathBuf,
        index: usize,
        name: String,
        problem: String,
    },
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OwnersFile {
    #[serde(default)]
    owner: Vec<OwnerEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OwnerEntry {
    name: String,
    role: Role,
    token_sha256: String,
    max_running_batches: Option<u64>,
    max_pending_boards: Option<u64>,
    max_nodes_per_day: Option<u64>,
    notify_secret: Option<String>,
}

/// The owners one reading of the file named, found by their token's hash.
#[derive(Debug, Default)]
pub struct OwnerBook {
    owners: Vec<Owner>,
    by_token: HashMap<[u8; 32], usize>,
}

impl OwnerBook {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<OwnerBook, OwnersError> {
        let text = std::fs::read_to_string(path).map_err(|source| OwnersError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        OwnerBook::parse(path, &text)
    }

    /// Checks `text`, read from `path`: every name and token hash once, every field known.
    pub fn parse(path: &Path, text: &str) -> Result<OwnerBook, OwnersError> {
        let file: OwnersFile = toml::from_str(text).map_err(|error| OwnersError::Parse {
            path: path.to_path_buf(),
            message: error.to_string().trim_end().to_string(),
        })?;
        let mut book = OwnerBook::default();
        for (index, entry) in file.owner.into_iter().enumerate() {
            let problem = |problem: String| OwnersError::Entry {
                path: path.to_path_buf(),
                index: index + 1,
                name: entry.name.clone(),
                problem,
            };
            let name = OwnerName::try_from(entry.name.clone()).map_err(problem)?;
            if book.owners.iter().any(|owner| owner.name == name) {
                return Err(problem("the name is given twice".into()));
            }
            let hash = parse_sha256(&entry.token_sha256).ok_or_else(|| {
                problem("token_sha256 is not 64 hex digits (tilesolve hash-token prints it)".into())
            })?;
            if book.by_token.contains_key(&hash) {
                return Err(problem("its token is another owner's too".into()));
            }
            let limits = OwnerLimits {
                running_batches: entry.max_running_batches,
                pending_boards: entry.max_pending_boards,
                nodes_per_day: entry.max_nodes_per_day,
            };
            book.by_token.insert(hash, book.owners.len());
            if entry.notify_secret.as_deref() == Some("") {
                return Err(problem("notify_secret is empty".into()));
            }
            book.owners.push(Owner {
                name,
                role: entry.role,
                limits,
                notify_secret: entry.notify_secret.as_deref().map(Arc::from),
            });
        }
        Ok(book)
    }

    /// The owner whose token is `token`.
    pub fn find(&self, token: &str) -> Option<&Owner> {
        self.by_token
            .get(&token_sha256(token))
            .map(|&index| &self.owners[index])
    }

    pub fn owners(&self) -> &[Owner] {
        &self.owners
    }
}

/// The SHA-256 of a token, as the owners file names it.
pub fn token_sha256(token: &str) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut hash = [0; 32];
    hash.copy_from_slice(digest.as_ref());
    hash
}

/// [`token_sha256`] in hex, as it is written in the file.
pub fn token_sha256_hex(token: &str) -> String {
    token_sha256(token)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A new token: 32 random bytes from the system's generator, in hex.
pub fn new_token() -> Result<String, ring::error::Unspecified> {
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut hash = [0; 32];
    for (byte, pair) in hash.iter_mut().zip(hex.as_bytes().chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(hash)
}

/// The owners in force, shared by the token checks; replaced whole by a reload.
#[derive(Clone, Debug, Default)]
pub struct Owners {
    path: Option<PathBuf>,
    book: Arc<RwLock<Arc<OwnerBook>>>,
}

impl Owners {
    /// No owners file: the coordinator's token (or none) is the only way in.
    pub fn none() -> Owners {
        Owners::default()
    }

    /// The owners the file at `path` names.
    pub fn load(path: &Path) -> Result<Owners, OwnersError> {
        let book = OwnerBook::load(path)?;
        Ok(Owners {
            path: Some(path.to_path_buf()),
            book: Arc::new(RwLock::new(Arc::new(book))),
        })
    }

    /// Whether an owners file is in use (then a call needs a token even without `--token`).
    pub fn configured(&self) -> bool {
        self.path.is_some()
    }

    /// The owners in force now.
    pub fn book(&self) -> Arc<OwnerBook> {
        match self.book.read() {
            Ok(book) => book.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Reads the file again; on an error the owners in force stay. Returns how many owners
    /// the file now names.
    pub fn reload(&self) -> Result<usize, OwnersError> {
        let Some(path) = &self.path else {
            return Ok(0);
        };
        let book = OwnerBook::load(path)?;
        let count = book.owners.len();
        match self.book.write() {
            Ok(mut held) => *held = Arc::new(book),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(book),
        }
        Ok(count)
    }

    /// The file's modification time and size, to tell that it changed (None: no file, or
    /// unreadable).
    pub fn file_stamp(&self) -> Option<(std::time::SystemTime, u64)> {
        let metadata = std::fs::metadata(self.path.as_ref()?).ok()?;
        Some((metadata.modified().ok()?, metadata.len()))
    }

    /// The owner named `name`, if the file names it.
    pub fn named(&self, name: &OwnerName) -> Option<Owner> {
        self.book()
            .owners
            .iter()
            .find(|owner| &owner.name == name)
            .cloned()
    }

    /// The owner of `token`, if the file names one.
    pub fn find(&self, token: &str) -> Option<Owner> {
        self.book().find(token).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(text: &str) -> Result<OwnerBook, OwnersError> {
        OwnerBook::parse(Path::new("owners.toml"), text)
    }

    fn entry(name: &str, role: &str, token: &str) -> String {
        format!(
            "[[owner]]\nname = \"{name}\"\nrole = \"{role}\"\ntoken_sha256 = \"{}\"\n",
            token_sha256_hex(token)
        )
    }

    #[test]
    fn an_owner_is_found_by_its_token_and_no_other() {
        let text = entry("alice", "submit", "a-secret")
            + "max_running_batches = 2\n"
            + &entry("bob", "read", "b-secret");
        let book = book(&text).unwrap();
        let alice = book.find("a-secret").unwrap();
        assert_eq!(alice.name.as_str(), "alice");
        assert_eq!(alice.role, Role::Submit);
        assert_eq!(alice.limits.running_batches, Some(2));
        assert_eq!(book.find("b-secret").unwrap().role, Role::Read);
        assert!(book.find("a-secret ").is_none());
        assert!(book.find("").is_none());
    }

    /// The SHA-256 of "test", as `sha256sum` prints it.
    #[test]
    fn the_hash_is_sha256_in_hex() {
        assert_eq!(
            token_sha256_hex("test"),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
    }

    #[test]
    fn a_bad_file_names_the_owner_and_the_problem() {
        let cases = [
            (
                entry("alice", "submit", "x") + &entry("alice", "read", "y"),
                "owner 2 (alice): the name is given twice",
            ),
            (
                entry("alice", "submit", "x") + &entry("bob", "read", "x"),
                "owner 2 (bob): its token is another owner's too",
            ),
            (entry("a b", "submit", "x"), "is not an owner name"),
            (entry("alice", "root", "x"), "unknown variant `root`"),
            (
                entry("alice", "read", "x") + "max_nodes = 5\n",
                "unknown field `max_nodes`",
            ),
            (
                "[[owner]]\nname = \"alice\"\nrole = \"read\"\ntoken_sha256 = \"abc\"\n"
                    .to_string(),
                "token_sha256 is not 64 hex digits",
            ),
        ];
        for (text, expected) in cases {
            let error = book(&text).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
            assert!(error.starts_with("owners file owners.toml"), "{error}");
        }
    }

    #[test]
    fn a_submitter_changes_its_own_batches_and_an_admin_any() {
        let owner = |name: &str, role| Caller {
            owner: Some(Owner {
                name: OwnerName::try_from(name.to_string()).unwrap(),
                role,
                limits: OwnerLimits::default(),
                notify_secret: None,
            }),
        };
        let alice = owner("alice", Role::Submit);
        let alices = alice.name().cloned();
        assert!(alice.may_change(alices.as_ref()));
        assert!(!alice.may_change(owner("bob", Role::Submit).name()));
        assert!(!alice.may_change(None));
        assert!(!owner("alice", Role::Read).may_change(alices.as_ref()));
        assert!(owner("root", Role::Admin).may_change(alices.as_ref()));
        assert!(Caller::OPERATOR.may_change(None));
    }

    #[test]
    fn a_reload_that_fails_keeps_the_owners_in_force() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("owners.toml");
        std::fs::write(&path, entry("alice", "submit", "a")).unwrap();
        let owners = Owners::load(&path).unwrap();
        std::fs::write(&path, "[[owner]]\nname = ").unwrap();
        assert!(owners.reload().is_err());
        assert!(owners.find("a").is_some());
        std::fs::write(&path, entry("bob", "read", "b")).unwrap();
        assert_eq!(owners.reload().unwrap(), 1);
        assert!(owners.find("a").is_none());
        assert_eq!(owners.find("b").unwrap().name.as_str(), "bob");
    }
}
