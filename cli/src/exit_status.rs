//! How a command ends, as its exit status: the statuses and what `--help` says of them.

/// How a command ended, as its exit status (listed in `tilesolve --help`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// Every board solved, or the command did what it was asked.
    Done = 0,
    /// Done, but some boards were not solved: invalid lines, failures, cancelled, not stored.
    Unsolved = 1,
    /// The command line is wrong (clap exits with it before any command runs), the file it
    /// names is not a batch's text, or the coordinator's address is malformed or of the wrong
    /// scheme: refused before anything is sent.
    BadInput = 2,
    /// The coordinator could not be reached, after retrying.
    Unreachable = 3,
    /// The coordinator refused the call.
    Refused = 4,
    /// Anything else: a file that cannot be read, a table that cannot be built, ...
    Failed = 5,
}

/// What `--help` says of exit statuses (kept beside [`ExitStatus`] so the two agree).
pub const EXIT_STATUS_HELP: &str = "\
Exit status:
  0  done: every board solved (or the command did what it was asked)
  1  done, but some boards were not solved: invalid lines, failures, cancelled, not stored
  2  the command line is wrong, or its batch file is not a batch's text (a NUL byte, binary
     noise, a line over 4096 bytes, over 100,000 lines): refused before anything is sent; so
     is a malformed coordinator address, or http:// to a coordinator that speaks TLS
     (https:// to one that does not)
  3  could not reach the coordinator (transport faults are retried first)
  4  the coordinator refused the call: token, permission, a malformed or too large request,
     an unknown batch (the message says which and what to do)
  5  any other error: a file that cannot be read, a table that cannot be built, ...";
