//! Connections that move nothing are closed: a socket that sends no byte and is sent none for
//! the idle timeout is dropped, so a client cannot hold connections open for ever by opening
//! them and staying silent.
//!
//! Live connections always move bytes: the server pings every HTTP/2 connection more often
//! than the timeout (see [`keepalive_interval`]) and the client's acknowledgement is a read; the
//! dashboard's event stream writes every second. A connection that never sent its first byte
//! has not finished the HTTP/2 handshake, so nothing pings it, and the timeout ends it.

use std::future::Future;
use std::io;
use std::pin::Pin;
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

/// An accepted connection that fails its reads once nothing has moved for `timeout`.
pub struct IdleTimeout<IO> {
    io: IO,
    timeout: Duration,
    last_activity: Instant,
    /// Fires at `last_activity + timeout` or earlier; moved on lazily (when it fires), so
    /// traffic costs one clock read per call instead of a timer update.
    deadline: Pin<Box<Sleep>>,
}

impl<IO> IdleTimeout<IO> {
    pub fn new(io: IO, timeout: Duration) -> IdleTimeout<IO> {
        let now = Instant::now();
        IdleTimeout {
            io,
            timeout,
            last_activity: now,
            deadline: Box::pin(tokio::time::sleep_until(now + timeout)),
        }
    }

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
