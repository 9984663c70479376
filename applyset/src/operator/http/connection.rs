//! The connections the controller's HTTP servers hand to axum, each with a deadline for its
//! request heads.
//!
//! A client that opens a connection and sends nothing (or trickles headers) would otherwise
//! hold a task and a file descriptor forever. hyper has the guard (`header_read_timeout`), but
//! it needs a timer, and `axum::serve` builds hyper's connections without one, so the guard is
//! kept here, below hyper: from the moment a connection is accepted, and again once a response
//! has been sent, the client has [`HEADER_READ_TIMEOUT`] to complete a request head (the empty
//! line after the header lines); a read past the deadline fails, and hyper closes the
//! connection. As with hyper's own guard, an idle keep-alive connection is thus closed after
//! the same time. Bodies are not timed here: the webhook receiver bounds its own read.
//!
//! Every connection also ends as soon as its server abandons it (see `Server::run`).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

use crate::causes::Chain;

/// How long a client has to send a request head.
pub(super) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Pause after a failed accept: the usual cause is running out of file descriptors, and retrying
/// at once would spin.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(100);

/// A bound socket whose accepted connections are [`Connection`]s.
pub(super) struct Listener {
    listener: TcpListener,
    /// Closed (its sender dropped) when the server abandons its connections.
    abandoned: watch::Receiver<()>,
}

impl Listener {
    pub(super) fn new(listener: TcpListener, abandoned: watch::Receiver<()>) -> Listener {
        Listener { listener, abandoned }
    }
}

impl axum::serve::Listener for Listener {
    type Io = Connection<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.listener.accept().await {
                Ok((stream, peer)) => return (Connection::new(stream, self.abandoned.clone()), peer),
                Err(error) => {
                    let address = self.listener.local_addr().ok();
                    tracing::warn!(address = ?address, error = %Chain(&error), "could not accept an HTTP connection");
                    tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// A connection whose request heads must arrive within [`HEADER_READ_TIMEOUT`].
pub(super) struct Connection<S> {
    stream: S,
    /// When the head awaited must be complete.
    deadline: Pin<Box<Sleep>>,
    /// Whether a request head is awaited (then the deadline runs).
    awaiting_head: bool,
    head_end: HeadEnd,
    /// A response was written since the last head: once it is flushed, the next head is awaited.
    answered: bool,
    /// Resolves when the server abandons its connections; `None` once it has.
    abandoned: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl<S> Connection<S> {
    fn new(stream: S, mut abandoned: watch::Receiver<()>) -> Connection<S> {
        Connection {
            stream,
            deadline: Box::pin(tokio::time::sleep(HEADER_READ_TIMEOUT)),
            awaiting_head: true,
            head_end: HeadEnd::default(),
            answered: false,
            // No value is ever sent: `changed` returns only when the sender is dropped.
            abandoned: Some(Box::pin(async move {
                let _ = abandoned.changed().await;
            })),
        }
    }

    /// An error when the server has abandoned the connection.
    fn check_abandoned(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if let Some(abandoned) = &mut self.abandoned
            && abandoned.as_mut().poll(cx).is_ready()
        {
            self.abandoned = None;
        }
        match self.abandoned {
            Some(_) => Ok(()),
            None => Err(io::Error::new(io::ErrorKind::ConnectionAborted, "the server stopped")),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Connection<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check_abandoned(cx)?;
        if this.awaiting_head && this.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "no complete request head in time")));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.stream).poll_read(cx, buf))?;
        if this.awaiting_head && this.head_end.found_in(&buf.filled()[before..]) {
            this.awaiting_head = false;
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Connection<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check_abandoned(cx)?;
        let written = ready!(Pin::new(&mut this.stream).poll_write(cx, buf))?;
        this.note_written(buf, written);
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check_abandoned(cx)?;
        let written = ready!(Pin::new(&mut this.stream).poll_write_vectored(cx, bufs))?;
        let first = bufs.iter().find(|buf| !buf.is_empty()).map_or(&[][..], |buf| &buf[..]);
        this.note_written(first, written);
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(Pin::new(&mut this.stream).poll_flush(cx))?;
        if std::mem::take(&mut this.answered) && !this.awaiting_head {
            this.awaiting_head = true;
            this.head_end = HeadEnd::default();
            this.deadline.as_mut().reset(Instant::now() + HEADER_READ_TIMEOUT);
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

impl<S> Connection<S> {
    /// A write that starts with `start` sent `written` bytes. An interim response (`100
    /// Continue`, sent before a body is read) does not end the request.
    fn note_written(&mut self, start: &[u8], written: usize) {
        if written > 0 && !start.starts_with(b"HTTP/1.1 1") {
            self.answered = true;
        }
    }
}

/// Finds the end of a request head, read in pieces: an empty line after a line with text (the
/// empty lines HTTP lets a client send before a request do not end anything). Lines may end in
/// CRLF or, as hyper also accepts, a bare LF.
#[derive(Debug)]
struct HeadEnd {
    /// Whether a line with text has been read.
    text_seen: bool,
    /// Whether the current line holds nothing but carriage returns so far.
    line_empty: bool,
}

impl Default for HeadEnd {
    fn default() -> HeadEnd {
        HeadEnd { text_seen: false, line_empty: true }
    }
}

impl HeadEnd {
    /// Whether `bytes`, the next ones read, complete the head.
    fn found_in(&mut self, bytes: &[u8]) -> bool {
        for &byte in bytes {
            match byte {
                b'\n' if self.line_empty && self.text_seen => return true,
                b'\n' => self.line_empty = true,
                b'\r' => {}
                _ => {
                    self.line_empty = false;
                    self.text_seen = true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;

    /// A connection over an in-memory pipe, the client's end, and the sender whose drop
    /// abandons the connection.
    fn connection() -> (Connection<DuplexStream>, DuplexStream, watch::Sender<()>) {
        let (server, client) = tokio::io::duplex(4096);
        let (abandon, abandoned) = watch::channel(());
        (Connection::new(server, abandoned), client, abandon)
    }

    /// What the server's next read gives, within `within`; `None` if it is still waiting.
    async fn read(connection: &mut Connection<DuplexStream>, within: Duration) -> Option<io::Result<String>> {
        let mut buffer = [0; 256];
        let read = tokio::time::timeout(within, connection.read(&mut buffer)).await.ok()?;
        Some(read.map(|n| String::from_utf8_lossy(&buffer[..n]).into_owned()))
    }

    fn timed_out(read: Option<io::Result<String>>) -> bool {
        matches!(read, Some(Err(error)) if error.kind() == io::ErrorKind::TimedOut)
    }

    #[test]
    fn the_head_ends_at_an_empty_line_after_text() {
        let found = |pieces: &[&str]| {
            let mut head = HeadEnd::default();
            pieces.iter().any(|piece| head.found_in(piece.as_bytes()))
        };
        assert!(found(&["GET / HTTP/1.1\r\nHost: x\r\n\r\n"]));
        assert!(found(&["GET / HTTP/1.1\r\nHost: x\r", "\n", "\r", "\n"]));
        assert!(found(&["GET / HTTP/1.1\nHost: x\n\n"]));
        assert!(!found(&["GET / HTTP/1.1\r\nHost: x\r\n"]));
        assert!(!found(&["\r\n\r\n\n\n"]), "empty lines before a request end nothing");
        assert!(found(&["\r\n", "GET / HTTP/1.1\r\n\r\n"]));
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_or_trickling_client_is_cut_off_at_the_deadline() {
        let (mut silent, _client, _abandon) = connection();
        let started = Instant::now();
        assert!(timed_out(read(&mut silent, Duration::from_secs(60)).await));
        assert!(started.elapsed() >= HEADER_READ_TIMEOUT && started.elapsed() < HEADER_READ_TIMEOUT * 2);

        let (mut trickled, mut client, _abandon) = connection();
        let started = Instant::now();
        client.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
        assert!(read(&mut trickled, Duration::from_secs(1)).await.unwrap().is_ok());
        loop {
            tokio::time::sleep(Duration::from_secs(3)).await;
            client.write_all(b"X-More: x\r\n").await.unwrap();
            match read(&mut trickled, Duration::from_secs(1)).await {
                Some(Ok(_)) => assert!(started.elapsed() <= HEADER_READ_TIMEOUT),
                other => {
                    assert!(timed_out(other));
                    break;
                }
            }
        }
        assert!(started.elapsed() >= HEADER_READ_TIMEOUT && started.elapsed() < HEADER_READ_TIMEOUT * 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_complete_head_stops_the_clock_until_the_response_is_sent() {
        let (mut connection, mut client, _abandon) = connection();
        client.write_all(b"POST /hook/x HTTP/1.1\r\nExpect: 100-continue\r\n\r\n").await.unwrap();
        assert!(read(&mut connection, Duration::from_secs(1)).await.unwrap().is_ok());
        // The body may take longer than a head may: it is not timed here.
        connection.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await.unwrap();
        connection.flush().await.unwrap();
        assert!(read(&mut connection, HEADER_READ_TIMEOUT * 3).await.is_none());

        // Once a response is sent, the next head is awaited, for as long as the first was.
        connection.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await.unwrap();
        connection.flush().await.unwrap();
        let answered = Instant::now();
        assert!(timed_out(read(&mut connection, Duration::from_secs(60)).await));
        assert!(answered.elapsed() >= HEADER_READ_TIMEOUT && answered.elapsed() < HEADER_READ_TIMEOUT * 2);
    }

    #[tokio::test]
    async fn an_abandoned_connection_fails_its_reads_and_writes() {
        let (mut connection, _client, abandon) = connection();
        assert!(read(&mut connection, Duration::from_millis(10)).await.is_none());
        drop(abandon);
        let read = read(&mut connection, Duration::from_secs(10)).await;
        assert!(matches!(read, Some(Err(error)) if error.kind() == io::ErrorKind::ConnectionAborted));
        assert!(connection.write_all(b"HTTP/1.1 200 OK\r\n").await.is_err());
    }
}
