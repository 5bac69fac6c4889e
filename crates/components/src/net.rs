//! Networking helpers shared by sources and sinks: address checks, the
//! client stream type (plain TCP or TLS), peer-closed detection before a
//! kept connection is reused, and the line sources' default connection cap.

use std::io::Read;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Default `max_connections` of the line sources (tcp, syslog_tcp).
pub const DEFAULT_MAX_CONNECTIONS: usize = 16_384;

/// Checks that `address` looks like `host:port` (resolution happens on connect).
pub fn check_address(address: &str) -> Result<(), String> {
    let Some((host, port)) = address.rsplit_once(':') else {
        return Err(format!("expected \"host:port\", found {address:?}"));
    };
    if host.is_empty() {
        return Err(format!("missing host in {address:?}"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => Err(format!("invalid port in {address:?}")),
    }
}

/// Whether the peer has closed (or reset) the connection. The peer of a log
/// sink is not expected to send anything; whatever it sent is discarded.
pub fn peer_closed(stream: &TcpStream) -> bool {
    let sock = socket2::SockRef::from(stream);
    let mut buf = [0u8; 1024];
    for _ in 0..64 {
        match (&*sock).read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
    false
}

/// A client connection, plain or TLS (the `tcp` and `http` sinks).
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl tokio::io::AsyncRead for Stream {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl Stream {
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(s) => s,
            Self::Tls(s) => s.get_ref().0,
        }
    }

    /// Writes all of `buf` (and flushes TLS records).
    pub async fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Self::Plain(s) => s.write_all(buf).await,
            Self::Tls(s) => {
                s.write_all(buf).await?;
                s.flush().await
            }
        }
    }

    /// Closes the write side (a TLS close_notify first).
    pub async fn shutdown(&mut self) -> std::io::Result<()> {
        match self {
            Self::Plain(s) => s.shutdown().await,
            Self::Tls(s) => s.shutdown().await,
        }
    }
}
