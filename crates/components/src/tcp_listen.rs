//! The plain TCP listener of the `tcp` source and the `gelf` source's `tcp`
//! mode: binding and logging the port ([`bind`]), then at most
//! `max_connections` connections at once (more are refused and counted by
//! `sluice_net`'s [`Listener`]), each read on a task of its own until
//! shutdown ([`serve`]).

use std::future::Future;
use std::net::SocketAddr;

use sluice_core::component::{BoxError, SourceContext};
use sluice_net::{Incoming, Listener, ListenerCounters};
use tokio::net::{TcpListener, TcpStream};

/// Binds `address` and logs `listening` with the local address and the
/// connection limit; the listener and its local address.
pub async fn bind(
    address: SocketAddr,
    max_connections: usize,
    cx: &SourceContext,
    listening: &str,
) -> Result<(Listener, SocketAddr), BoxError> {
    let listener = TcpListener::bind(address).await.map_err(|e| format!("bind {address}: {e}"))?;
    let local = listener.local_addr()?;
    tracing::info!(source = %cx.id, address = %local, max_connections, "{listening}");
    Ok((Listener::new(listener, &cx.id, max_connections, ListenerCounters::of(&cx.metrics)), local))
}

/// Accepts until shutdown, running `read(stream, cx)` for each connection on
/// a task that holds its connection slot; a connection that ends with an
/// error is counted in the source's `errors` and logged (debug).
pub async fn serve<R, F>(mut listener: Listener, cx: &SourceContext, read: R) -> Result<(), BoxError>
where
    R: Fn(TcpStream, SourceContext) -> F,
    F: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    loop {
        tokio::select! {
            _ = cx.shutdown.cancelled() => return Ok(()),
            incoming = listener.accept() => {
                let (stream, guard) = match incoming {
                    Incoming::Open(stream, _peer, guard) => (stream, guard),
                    Incoming::Refused(..) => continue,
                };
                let task = read(stream, cx.clone());
                let cx = cx.clone();
                tokio::spawn(async move {
                    let _guard = guard;
                    if let Err(e) = task.await {
                        cx.metrics.errors.inc();
                        tracing::debug!(source = %cx.id, error = %e, "connection ended with error");
                    }
                });
            }
        }
    }
}
