//! Starting the coordinator again in place after its store failed (a full disk): the program
//! replaces itself (`exec`) with the same arguments and keeps its listening socket.
//!
//! Why not reopen the store in the same process: after a failed write, sled may wait for ever
//! in the flush it runs when its last handle is dropped, and it holds the store's lock file
//! until then, so a second open in the same process can never succeed. `exec` ends every
//! thread, and with them every open file, lock and mapping; what was acknowledged is on disk.

use anyhow::Context;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::process::CommandExt;

/// The variable naming the listening socket handed to the program that replaces this one.
const LISTEN_FD: &str = "TILESOLVE_LISTEN_FD";

/// The listening socket this process was handed by the one it replaced, if any. The variable
/// is removed, and a number that is not an open socket is refused.
pub fn inherited_listener() -> anyhow::Result<Option<TcpListener>> {
    let Some(value) = std::env::var_os(LISTEN_FD) else {
        return Ok(None);
    };
    // Removed before the runtime starts threads that might read the environment.
    std::env::remove_var(LISTEN_FD);
    let fd: RawFd = value
        .to_str()
        .and_then(|text| text.parse().ok())
        .filter(|&fd| fd > 2 && is_socket(fd))
        .with_context(|| format!("{LISTEN_FD}={value:?} is not an open socket"))?;
    // SAFETY: the socket is open (checked above), handed over by the program this one
    // replaced, and owned by nothing else here.
    let listener = unsafe { TcpListener::from_raw_fd(fd) };
    set_close_on_exec(fd, true)?;
    listener.set_nonblocking(true)?;
    Ok(Some(listener))
}

fn is_socket(fd: RawFd) -> bool {
    // SAFETY: fstat only writes the struct it is given.
    let mut status: libc::stat = unsafe { std::mem::zeroed() };
    unsafe { libc::fstat(fd, &mut status) == 0 && status.st_mode & libc::S_IFMT == libc::S_IFSOCK }
}

fn set_close_on_exec(fd: RawFd, close: bool) -> std::io::Result<()> {
    let flags = if close { libc::FD_CLOEXEC } else { 0 };
    // SAFETY: F_SETFD on an open descriptor changes only its flags.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, flags) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Replaces this process with a new run of the same program and arguments, handing it
/// `listener`. Returns only if that fails.
pub fn restart_in_place(listener: TcpListener) -> anyhow::Error {
    let replaced = (|| -> anyhow::Result<std::io::Error> {
        let program = std::env::current_exe().context("finding this program's file")?;
        set_close_on_exec(listener.as_raw_fd(), false)?;
        Ok(std::process::Command::new(program)
            .args(std::env::args_os().skip(1))
            .env(LISTEN_FD, listener.as_raw_fd().to_string())
            .exec())
    })();
    match replaced {
        Ok(error) => anyhow::Error::new(error).context("starting this program again in place"),
        Err(error) => error,
    }
}
