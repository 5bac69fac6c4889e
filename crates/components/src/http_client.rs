//! A small HTTP/1.1 client used by the `http` and `elasticsearch` sinks.
//!
//! Requests are written by the caller over a kept [`crate::net::Stream`];
//! this module parses `http://` / `https://` URIs, checks header names and
//! values, and reads one response (skipping 1xx) by `Content-Length`,
//! `chunked` or to end of stream, keeping at most a caller-given number of
//! body bytes. The workspace has `hyper` only through axum, without its
//! client feature, and the sinks need nothing more than this (ADR 0075).

use std::io;
use std::time::Duration;

use sluice_core::metrics::Counter;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::TcpStream;

use crate::net::{peer_closed, Stream};

/// A TLS connector and the name the server's certificate must carry.
pub type TlsTarget = (tokio_rustls::TlsConnector, tokio_rustls::rustls::pki_types::ServerName<'static>);

/// Largest accepted response head.
const MAX_HEAD: usize = 64 << 10;
/// The parts of an `http://` URI the client needs.
#[derive(Debug, PartialEq, Eq)]
pub struct Uri {
    /// `host:port` for connecting (IPv6 in brackets).
    pub connect: String,
    /// The `Host` header value (authority as written).
    pub host_header: String,
    /// Path and query, starting with `/`.
    pub target: String,
    /// `https://`.
    pub tls: bool,
}

impl Uri {
    /// The URI as requested: scheme, authority and target (no fragment).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{}", self.host_header, self.target)
    }
}

/// Why a configured URI is refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    #[error("expected an http:// or https:// URI, found {0:?}")]
    Scheme(String),
    #[error("the path of {0:?} contains spaces or control characters (percent-encode them)")]
    PathCharacters(String),
    #[error("credentials in the URI are not supported; use auth_token or headers")]
    Credentials,
    #[error("unclosed '[' in {0:?}")]
    UnclosedBracket(String),
    #[error("missing host in {0:?}")]
    MissingHost(String),
    #[error("invalid port in {0:?}")]
    InvalidPort(String),
}

/// Why a request or its response failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpClientError {
    #[error("connect {addr}: {source}")]
    Connect { addr: String, source: io::Error },
    #[error("set TCP_NODELAY: {0}")]
    NoDelay(io::Error),
    #[error("tls handshake with {addr}: {source}")]
    TlsHandshake { addr: String, source: io::Error },
    #[error("sending the request: {0}")]
    Send(io::Error),
    /// The connection ended before any byte of a response: typically an
    /// idle keep-alive connection the server had closed.
    #[error("connection closed before a response")]
    ClosedBeforeResponse,
    /// Reading failed (e.g. reset) before any byte of a response.
    #[error("reading the response: {0}")]
    ReadBeforeResponse(io::Error),
    #[error("reading the response: {0}")]
    Read(io::Error),
    #[error("connection closed in the middle of the response head")]
    ClosedInHead,
    #[error("connection closed in the middle of the response")]
    ClosedInBody,
    #[error("response head too large")]
    HeadTooLarge,
    #[error("response line too long")]
    LineTooLong,
    #[error("invalid status line {0:?}")]
    InvalidStatusLine(String),
    #[error("invalid {0:?}")]
    InvalidHeader(String),
    #[error("invalid chunk size {0:?}")]
    InvalidChunkSize(String),
    #[error("missing CRLF after a chunk")]
    MissingChunkCrlf,
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// Any of the above, naming the request (`POST http://host/path: …`).
    #[error("POST {url}: {source}")]
    Request { url: String, source: Box<HttpClientError> },
}

impl HttpClientError {
    /// Nothing of a response arrived: a request on a reused connection may
    /// be sent again on a new one.
    pub fn nothing_received(&self) -> bool {
        matches!(self, Self::ClosedBeforeResponse | Self::ReadBeforeResponse(_))
    }
}

/// Parses an `http://` or `https://` URI; errors name what is wrong.
pub fn parse_uri(s: &str) -> Result<Uri, UriError> {
    let (rest, tls) = match (s.strip_prefix("http://"), s.strip_prefix("https://")) {
        (Some(r), _) => (r, false),
        (None, Some(r)) => (r, true),
        (None, None) => return Err(UriError::Scheme(s.into())),
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let (authority, target) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let target = if target.starts_with('?') { format!("/{target}") } else { target.to_string() };
    if target.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
        return Err(UriError::PathCharacters(s.into()));
    }
    if authority.contains('@') {
        return Err(UriError::Credentials);
    }
    let (host, port) = if let Some(r) = authority.strip_prefix('[') {
        let (h, after) = r.split_once(']').ok_or_else(|| UriError::UnclosedBracket(s.into()))?;
        (format!("[{h}]"), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(UriError::MissingHost(s.into()));
    }
    let port = match port {
        None if tls => 443,
        None => 80,
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| UriError::InvalidPort(s.into()))?,
    };
    Ok(Uri { connect: format!("{host}:{port}"), host_header: authority.to_string(), target, tls })
}

/// The start of a request head POSTing ndjson to `uri`: request line,
/// `Host`, `User-Agent` and `Content-Type`, each ended by CRLF (the caller
/// adds its headers, `Content-Length` and the blank line).
pub fn ndjson_post_head(uri: &Uri) -> String {
    format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: sluice/{}\r\nContent-Type: application/x-ndjson\r\n",
        uri.target,
        uri.host_header,
        env!("CARGO_PKG_VERSION")
    )
}

/// Whether `name` is an HTTP header name (an RFC 9110 token).
pub fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether a header value holds CR, LF or NUL (header injection).
pub fn bad_value(v: &str) -> bool {
    v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)
}

/// A parsed response: its status and the start of its body.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    pub keep_alive: bool,
}

/// The first position of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads more bytes into `buf`; end of stream is an error.
async fn fill<R: AsyncRead + Unpin>(r: &mut R, buf: &mut Vec<u8>) -> Result<(), HttpClientError> {
    buf.reserve(8192);
    match r.read_buf(buf).await {
        Ok(0) => Err(HttpClientError::ClosedInBody),
        Ok(_) => Ok(()),
        Err(e) => Err(HttpClientError::Read(e)),
    }
}

fn keep(snippet: &mut Vec<u8>, bytes: &[u8], max: usize) {
    let room = max.saturating_sub(snippet.len());
    snippet.extend_from_slice(&bytes[..room.min(bytes.len())]);
}

/// Consumes exactly `n` body bytes (from `buf`, then from `r`).
async fn body_exact<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    mut n: usize,
    snippet: &mut Vec<u8>,
    max: usize,
) -> Result<(), HttpClientError> {
    loop {
        let take = n.min(buf.len());
        keep(snippet, &buf[..take], max);
        buf.drain(..take);
        n -= take;
        if n == 0 {
            return Ok(());
        }
        fill(r, buf).await?;
    }
}

/// Returns the index of the next CRLF in `buf`, reading as needed.
async fn line_end<R: AsyncRead + Unpin>(r: &mut R, buf: &mut Vec<u8>) -> Result<usize, HttpClientError> {
    loop {
        if let Some(i) = find(buf, b"\r\n") {
            return Ok(i);
        }
        if buf.len() > MAX_HEAD {
            return Err(HttpClientError::LineTooLong);
        }
        fill(r, buf).await?;
    }
}

async fn chunked_body<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    snippet: &mut Vec<u8>,
    max: usize,
) -> Result<(), HttpClientError> {
    loop {
        let i = line_end(r, buf).await?;
        let line = String::from_utf8_lossy(&buf[..i]).into_owned();
        buf.drain(..i + 2);
        let size_hex = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| HttpClientError::InvalidChunkSize(line.clone()))?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                let i = line_end(r, buf).await?;
                buf.drain(..i + 2);
                if i == 0 {
                    return Ok(());
                }
            }
        }
        body_exact(r, buf, size, snippet, max).await?;
        while buf.len() < 2 {
            fill(r, buf).await?;
        }
        if &buf[..2] != b"\r\n" {
            return Err(HttpClientError::MissingChunkCrlf);
        }
        buf.drain(..2);
    }
}

/// Reads one final response (skipping 1xx) from `r`, keeping at most
/// `max_body` bytes of its body. `buf` holds bytes already read and keeps
/// whatever follows the response.
pub async fn read_response<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max_body: usize,
) -> Result<Response, HttpClientError> {
    let mut received = !buf.is_empty();
    loop {
        let head_end = loop {
            if let Some(i) = find(buf, b"\r\n\r\n") {
                break i;
            }
            if buf.len() > MAX_HEAD {
                return Err(HttpClientError::HeadTooLarge);
            }
            buf.reserve(8192);
            match r.read_buf(buf).await {
                Ok(0) if !received => return Err(HttpClientError::ClosedBeforeResponse),
                Ok(0) => return Err(HttpClientError::ClosedInHead),
                Ok(_) => received = true,
                Err(e) if !received => return Err(HttpClientError::ReadBeforeResponse(e)),
                Err(e) => return Err(HttpClientError::Read(e)),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default();
        let status = parts.next().and_then(|s| s.parse::<u16>().ok());
        let (Some(status), true) = (status, version.starts_with("HTTP/1.")) else {
            return Err(HttpClientError::InvalidStatusLine(status_line.into()));
        };
        let mut keep_alive = version == "HTTP/1.1";
        let mut length = None;
        let mut chunked = false;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else { continue };
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>().map_err(|_| HttpClientError::InvalidHeader(line.into()))?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.to_ascii_lowercase().split(',').any(|t| t.trim() == "chunked");
            } else if name.eq_ignore_ascii_case("connection") {
                let v = value.to_ascii_lowercase();
                if v.split(',').any(|t| t.trim() == "close") {
                    keep_alive = false;
                } else if v.split(',').any(|t| t.trim() == "keep-alive") {
                    keep_alive = true;
                }
            }
        }
        if (100..200).contains(&status) {
            continue;
        }
        let mut body = Vec::new();
        if status == 204 || status == 304 {
            // No body.
        } else if chunked {
            chunked_body(r, buf, &mut body, max_body).await?;
        } else if let Some(n) = length {
            body_exact(r, buf, n, &mut body, max_body).await?;
        } else {
            // Delimited by the end of the connection.
            keep_alive = false;
            loop {
                keep(&mut body, buf, max_body);
                buf.clear();
                match r.read_buf(buf).await {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) => return Err(HttpClientError::Read(e)),
                }
            }
        }
        return Ok(Response { status, body, keep_alive });
    }
}
/// One kept-alive connection to a server (plain or TLS), opened on demand
/// and reused while the server keeps it open.
#[derive(Default)]
pub struct KeptConn {
    /// The connection and the bytes read past the previous response.
    conn: Option<(Stream, Vec<u8>)>,
}

impl KeptConn {
    /// Drops the connection (after an error or a timeout).
    pub fn reset(&mut self) {
        self.conn = None;
    }

    /// [`KeptConn::exchange`] to `uri` within `timeout`; on any error the
    /// connection is dropped and the message names the request
    /// (`POST http://host/path: …`).
    #[allow(clippy::too_many_arguments)]
    pub async fn post(
        &mut self,
        uri: &Uri,
        tls: Option<&TlsTarget>,
        req: &[u8],
        max_body: usize,
        timeout: Duration,
        requests: &Counter,
        bytes_out: &Counter,
    ) -> Result<Response, HttpClientError> {
        let attempt = self.exchange(&uri.connect, tls, req, max_body, requests, bytes_out);
        let failed = match tokio::time::timeout(timeout, attempt).await {
            Ok(Ok(r)) => return Ok(r),
            Ok(Err(e)) => e,
            Err(_) => HttpClientError::Timeout(timeout),
        };
        self.reset();
        Err(HttpClientError::Request { url: uri.url(), source: Box::new(failed) })
    }

    /// Sends `req` to `connect` (`host:port`, TLS when `tls` is set) and
    /// reads one response keeping at most `max_body` body bytes, on the kept
    /// connection when it is still open, else on a new one. A request on a
    /// reused connection that the server closed before answering is sent
    /// again once on a new connection. Counts each attempt in `requests` and
    /// the bytes written in `bytes_out`.
    pub async fn exchange(
        &mut self,
        connect: &str,
        tls: Option<&TlsTarget>,
        req: &[u8],
        max_body: usize,
        requests: &Counter,
        bytes_out: &Counter,
    ) -> Result<Response, HttpClientError> {
        if self.conn.as_ref().is_some_and(|(s, _)| peer_closed(s.tcp())) {
            self.conn = None;
        }
        loop {
            let ((mut stream, mut rbuf), reused) = match self.conn.take() {
                Some(c) => (c, true),
                None => {
                    let tcp = TcpStream::connect(connect)
                        .await
                        .map_err(|source| HttpClientError::Connect { addr: connect.into(), source })?;
                    // Each request is one write, so Nagle would only delay its
                    // last segment behind the server's delayed ACK.
                    tcp.set_nodelay(true).map_err(HttpClientError::NoDelay)?;
                    let stream = match tls {
                        None => Stream::Plain(tcp),
                        Some((conn, name)) => Stream::Tls(Box::new(
                            conn.connect(name.clone(), tcp)
                                .await
                                .map_err(|source| HttpClientError::TlsHandshake { addr: connect.into(), source })?,
                        )),
                    };
                    ((stream, Vec::new()), false)
                }
            };
            requests.inc();
            if let Err(e) = stream.write_all(req).await {
                if reused {
                    continue;
                }
                return Err(HttpClientError::Send(e));
            }
            bytes_out.add(req.len() as u64);
            match read_response(&mut stream, &mut rbuf, max_body).await {
                Ok(resp) => {
                    if resp.keep_alive {
                        self.conn = Some((stream, rbuf));
                    }
                    return Ok(resp);
                }
                Err(e) if reused && e.nothing_received() => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How much of a response body the tests keep.
    const BODY_SNIPPET: usize = 200;

    async fn read(bytes: &[u8]) -> (Result<Response, HttpClientError>, Vec<u8>) {
        let mut r = bytes;
        let mut buf = Vec::new();
        let res = read_response(&mut r, &mut buf, BODY_SNIPPET).await;
        buf.extend_from_slice(r);
        (res, buf)
    }

    #[tokio::test]
    async fn response_parsing() {
        let (r, rest) =
            read(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1").await;
        assert_eq!(r.unwrap(), Response { status: 201, body: b"hello".to_vec(), keep_alive: true });
        assert_eq!(rest, b"HTTP/1.1");

        let (r, rest) = read(
            b"HTTP/1.1 500 Oops\r\ntransfer-encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2;ext\r\nde\r\n0\r\nX-T: 1\r\n\r\nNEXT",
        )
        .await;
        assert_eq!(r.unwrap(), Response { status: 500, body: b"abcde".to_vec(), keep_alive: false });
        assert_eq!(rest, b"NEXT");

        let (r, _) = read(b"HTTP/1.0 200 OK\r\n\r\nuntil the end").await;
        assert_eq!(r.unwrap(), Response { status: 200, body: b"until the end".to_vec(), keep_alive: false });

        let (r, _) = read(b"HTTP/1.1 204 No Content\r\n\r\n").await;
        assert_eq!(r.unwrap(), Response { status: 204, body: vec![], keep_alive: true });

        assert!(matches!(read(b"").await.0, Err(HttpClientError::ClosedBeforeResponse)));
        assert!(
            matches!(read(b"SMTP ready\r\n\r\n").await.0, Err(HttpClientError::InvalidStatusLine(l)) if l == "SMTP ready")
        );
        assert!(matches!(
            read(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort").await.0,
            Err(HttpClientError::ClosedInBody)
        ));
        assert!(matches!(
            read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").await.0,
            Err(HttpClientError::InvalidChunkSize(l)) if l == "zz"
        ));
    }

    #[test]
    fn uris() {
        let u = parse_uri("http://example.com:9000/a/b?c=d#frag").unwrap();
        assert_eq!(
            u,
            Uri {
                connect: "example.com:9000".into(),
                host_header: "example.com:9000".into(),
                target: "/a/b?c=d".into(),
                tls: false,
            }
        );
        let u = parse_uri("http://[::1]?q").unwrap();
        assert_eq!(
            u,
            Uri { connect: "[::1]:80".into(), host_header: "[::1]".into(), target: "/?q".into(), tls: false }
        );
        let u = parse_uri("https://logs.example/in").unwrap();
        assert_eq!(
            u,
            Uri {
                connect: "logs.example:443".into(),
                host_header: "logs.example".into(),
                target: "/in".into(),
                tls: true
            }
        );
        assert_eq!(parse_uri("ftp://x/"), Err(UriError::Scheme("ftp://x/".into())));
        assert_eq!(parse_uri("http://:80/"), Err(UriError::MissingHost("http://:80/".into())));
        assert_eq!(parse_uri("http://x:0/"), Err(UriError::InvalidPort("http://x:0/".into())));
        assert_eq!(parse_uri("http://u:p@x/"), Err(UriError::Credentials));
        assert_eq!(parse_uri("http://x/a b"), Err(UriError::PathCharacters("http://x/a b".into())));
        assert_eq!(parse_uri("http://[::1/").unwrap_err().to_string(), "unclosed '[' in \"http://[::1/\"");
        let e = HttpClientError::Request {
            url: "http://x/in".into(),
            source: Box::new(HttpClientError::Timeout(Duration::from_secs(2))),
        };
        assert_eq!(e.to_string(), "POST http://x/in: no response within 2s");
    }
}
