//! Accepted connections: closed when they move nothing, and all at once when serving has ended.
//!
//! A socket that sends no byte and is sent none for the idle timeout is dropped, so a client
//! cannot hold connections open for ever by opening them and staying silent. Live connections
//! always move bytes: the server pings every HTTP/2 connection more often than the timeout (see
//! [`keepalive_interval`]) and the client's acknowledgement is a read; the dashboard's event
//! stream writes every second. A connection that never sent its first byte has not finished
//! the HTTP/2 handshake, so nothing pings it, and the timeout ends it.
//!
//! Those pings also keep alive a connection whose call never ends (a handler waiting on a
//! flush that a full disk keeps from returning), and the server's end does not stop the
//! connection's task. So every accepted socket is listed in [`OpenSockets`], and once serving
//! has ended and the grace for calls in flight is over, [`OpenSockets::close_all`] shuts them
//! down: their clients hear the connection end and may try again, instead of waiting for as
//! long as the process lives (which, after a full disk, is until room returns).

use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tonic::transport::server::Connected;

/// How often the server pings an HTTP/2 connection: well inside the idle timeout, so that a
/// live client's acknowledgements keep its connection open.
pub fn keepalive_interval(idle_timeout: Duration) -> Duration {
    (idle_timeout / 3).min(Duration::from_secs(10))
}

/// The accepted sockets not yet closed, by file descriptor.
#[derive(Clone, Default)]
pub struct OpenSockets(Arc<Mutex<HashSet<RawFd>>>);

impl OpenSockets {
    /// Lists `socket` until the returned guard is dropped, which must happen before the
    /// socket is closed (so that its number, free again, is never shut down for another).
    fn track(&self, socket: &impl AsRawFd) -> OpenSocket {
        let fd = socket.as_raw_fd();
        self.lock().insert(fd);
        OpenSocket {
            sockets: self.clone(),
            fd,
        }
    }

    /// Shuts down every listed socket both ways (`shutdown(2)`): each connection's reads end
    /// and its writes fail, so its task ends and drops the calls it still holds. Returns how
    /// many there were.
    pub fn close_all(&self) -> usize {
        let sockets = self.lock();
        for &fd in sockets.iter() {
            // SAFETY: a listed descriptor is open (its guard is dropped, under this lock,
            // before its socket closes); shutdown changes no memory, and its failure (a peer
            // already gone) leaves nothing to do.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
        sockets.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<RawFd>> {
        // A set of numbers cannot be left half-changed by a panic.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An accepted socket's place in [`OpenSockets`], given up when dropped.
struct OpenSocket {
    sockets: OpenSockets,
    fd: RawFd,
}

impl Drop for OpenSocket {
    fn drop(&mut self) {
        self.sockets.lock().remove(&self.fd);
    }
}

/// An accepted connection that fails its reads once nothing has moved for `timeout`, listed
/// in [`OpenSockets`] while it is open.
pub struct IdleTimeout<IO> {
    /// Declared before `io`, so dropped before the socket closes.
    _listed: OpenSocket,
    io: IO,
    timeout: Duration,
    last_activity: Instant,
    /// Fires at `last_activity + timeout` or earlier; moved on lazily (when it fires), so
    /// traffic costs one clock read per call instead of a timer update.
    deadline: Pin<Box<Sleep>>,
}

impl<IO: AsRawFd> IdleTimeout<IO> {
    pub fn new(io: IO, timeout: Duration, open: &OpenSockets) -> IdleTimeout<IO> {
        let now = Instant::now();
        IdleTimeout {
            _listed: open.track(&io),
            io,
            timeout,
            last_activity: now,
            deadline: Box::pin(tokio::time::sleep_until(now + timeout)),
        }
    }
}

impl<IO> IdleTimeout<IO> {
    /// Whether the connection has been idle for the whole timeout (registers the wake-up
    /// otherwise).
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            if self.deadline.as_mut().poll(cx).is_pending() {
                return false;
            }
            let due = self.last_activity + self.timeout;
            if Instant::now() >= due {
                return true;
            }
            self.deadline.as_mut().reset(due);
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for IdleTimeout<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    self.last_activity = Instant::now();
                }
                Poll::Ready(result)
            }
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no byte either way for {:?}: closed", self.timeout),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for IdleTimeout<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.last_activity = Instant::now();
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.last_activity = Instant::now();
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

impl<IO: Connected> Connected for IdleTimeout<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}
