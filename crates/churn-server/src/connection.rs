//! Accepted connections. hyper answers a request it cannot parse (a target over 64 KiB, a
//! header block over its buffer, a malformed request line or header) by itself, before any
//! route or middleware runs: a bare head with `content-length: 0`, then it closes the
//! connection. Each connection's writes pass through [`HouseAnswers`], which replaces exactly
//! that head with the same status in the house error shape (request id, `nosniff`, the
//! per-IP limit headers), so a client sees one error format whichever layer refused it.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::ApiError;
use crate::limits::RateLimits;

/// A TCP listener whose connections answer unparseable requests in the house shape.
pub struct Listener {
    inner: tokio::net::TcpListener,
    limits: Option<Arc<RateLimits>>,
}

impl Listener {
    pub fn new(inner: tokio::net::TcpListener, limits: Option<Arc<RateLimits>>) -> Self {
        Self { inner, limits }
    }
}

impl axum::serve::Listener for Listener {
    type Io = HouseAnswers<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = axum::serve::Listener::accept(&mut self.inner).await;
        (HouseAnswers::new(io, addr.ip(), self.limits.clone()), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// The TLS acceptor, wrapped so that the decrypted stream gets the same treatment.
#[derive(Clone)]
pub struct Acceptor<A> {
    inner: A,
    limits: Option<Arc<RateLimits>>,
}

impl<A> Acceptor<A> {
    pub fn new(inner: A, limits: Option<Arc<RateLimits>>) -> Self {
        Self { inner, limits }
    }
}

impl<A, S> axum_server::accept::Accept<tokio::net::TcpStream, S> for Acceptor<A>
where
    A: axum_server::accept::Accept<tokio::net::TcpStream, S> + Clone + Send + 'static,
    A::Future: Send,
    S: Send + 'static,
{
    type Stream = HouseAnswers<A::Stream>;
    type Service = A::Service;
    type Future = futures::future::BoxFuture<'static, io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: tokio::net::TcpStream, service: S) -> Self::Future {
        let peer = stream.peer_addr().map(|a| a.ip());
        let limits = self.limits.clone();
        let accepting = self.inner.accept(stream, service);
        Box::pin(async move {
            let (stream, service) = accepting.await?;
            let peer = peer.unwrap_or(IpAddr::from([0, 0, 0, 0]));
            Ok((HouseAnswers::new(stream, peer, limits), service))
        })
    }
}

/// A connection whose outgoing bytes pass through unchanged, except hyper's own answer to an
/// unparseable request (always the connection's last bytes), which is rewritten.
pub struct HouseAnswers<IO> {
    inner: IO,
    peer: IpAddr,
    limits: Option<Arc<RateLimits>>,
    /// Bytes accepted from hyper but not yet written: only ever the rewritten answer.
    pending: Vec<u8>,
    written: usize,
}

impl<IO> HouseAnswers<IO> {
    fn new(inner: IO, peer: IpAddr, limits: Option<Arc<RateLimits>>) -> Self {
        Self {
            inner,
            peer,
            limits,
            pending: Vec::new(),
            written: 0,
        }
    }
}

impl<IO: AsyncWrite + Unpin> HouseAnswers<IO> {
    /// Writes what is pending; ready once nothing is.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n =
                ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }

    /// Takes `buf` whole when it ends with hyper's bare error head, queueing what comes before
    /// it and the rewritten answer instead.
    fn rewrite(&mut self, buf: &[u8]) -> bool {
        let Some((at, status)) = bare_error_head(buf) else {
            return false;
        };
        self.pending.extend_from_slice(&buf[..at]);
        self.pending
            .extend_from_slice(&house_answer(status, self.peer, self.limits.as_deref()));
        true
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for HouseAnswers<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for HouseAnswers<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        if self.rewrite(buf) {
            // Taken whole; the queued bytes leave now or on the flush that follows.
            if let Poll::Ready(Err(e)) = self.drain(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        // hyper queues a head as a buffer of its own, so its bare error head is a whole slice.
        let last = bufs.iter().rposition(|b| !b.is_empty());
        if let Some(last) = last
            && matches!(bare_error_head(&bufs[last]), Some((0, _)))
        {
            let whole: Vec<u8> = bufs[..=last]
                .iter()
                .flat_map(|b| b.iter().copied())
                .collect();
            if self.rewrite(&whole) {
                if let Poll::Ready(Err(e)) = self.drain(cx) {
                    return Poll::Ready(Err(e));
                }
                return Poll::Ready(Ok(whole.len()));
            }
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The statuses hyper answers by itself when it cannot parse a request.
const BARE_STATUSES: [StatusCode; 3] = [
    StatusCode::BAD_REQUEST,
    StatusCode::URI_TOO_LONG,
    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
];

/// Where hyper's bare error head starts in `buf`, and its status, when `buf` ends with one:
/// one of [`BARE_STATUSES`] with no headers but `connection: close`, `content-length: 0` and
/// `date`. Every answer of the app carries more (at least `x-request-id`), so none matches.
fn bare_error_head(buf: &[u8]) -> Option<(usize, StatusCode)> {
    if !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    let at = memchr_last(buf, b"HTTP/1.1 ")?;
    let head = std::str::from_utf8(&buf[at..buf.len() - 4]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let code: u16 = status_line.get(9..12)?.parse().ok()?;
    let status = StatusCode::from_u16(code).ok()?;
    if !BARE_STATUSES.contains(&status) {
        return None;
    }
    let mut names = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(": ")?;
        match (name.to_ascii_lowercase().as_str(), value) {
            ("connection", "close") | ("content-length", "0") | ("date", _) => {
                names.push(name.to_ascii_lowercase())
            }
            _ => return None,
        }
    }
    names.sort();
    (names == ["connection", "content-length", "date"]).then_some((at, status))
}

fn memchr_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// The same status in the house shape, closing the connection as hyper would have.
fn house_answer(status: StatusCode, peer: IpAddr, limits: Option<&RateLimits>) -> Vec<u8> {
    let (code, message) = match status {
        StatusCode::URI_TOO_LONG => (
            "URI_TOO_LONG",
            "the request target is longer than the server accepts",
        ),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => (
            "REQUEST_HEADER_FIELDS_TOO_LARGE",
            "the request's headers are larger than the server accepts",
        ),
        _ => ("VALIDATION_ERROR", "the request is not valid HTTP/1.1"),
    };
    let body = ApiError::new(status, code, message).body_bytes();
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\
         x-content-type-options: nosniff\r\nx-request-id: {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len(),
        uuid::Uuid::new_v4(),
    );
    if let Some(limits) = limits {
        for (name, value) in limits.charge_unparsed(peer) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str("\r\n");
    let mut answer = head.into_bytes();
    answer.extend_from_slice(&body);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    const BARE_414: &[u8] = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\ndate: Mon, 23 Nov 2026 15:03:10 GMT\r\n\r\n";

    #[test]
    fn only_hyper_bare_error_heads_match() {
        assert_eq!(
            bare_error_head(BARE_414),
            Some((0, StatusCode::URI_TOO_LONG))
        );
        let mut after_body = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}".to_vec();
        let at = after_body.len();
        after_body.extend_from_slice(BARE_414);
        assert_eq!(
            bare_error_head(&after_body),
            Some((at, StatusCode::URI_TOO_LONG))
        );
        // The app's own answers carry more headers; other statuses are never hyper's.
        let ours = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\nx-request-id: a\r\ndate: x\r\n\r\n";
        assert_eq!(bare_error_head(ours), None);
        let no_content =
            b"HTTP/1.1 204 No Content\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(bare_error_head(no_content), None);
        assert_eq!(
            bare_error_head(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nbody"),
            None
        );
    }
}
