//! The forward protocol's optional shared-key handshake: the server sends
//! HELO with a fresh random nonce, the client answers PING with
//! `hex(sha512(salt + hostname + nonce + shared_key))`, the server checks it
//! (constant time) and answers PONG — `true` with its own digest, or
//! `false` with the reason, after which the connection is closed.

use sha2::{Digest as _, Sha512};
use sluice_core::component::BoxError;
use sluice_core::secret::{ct_eq, hex, random_hex};
use sluice_parsers::fluent_forward::{helo, next_ping, pong};
use tokio::io::AsyncWriteExt;

use super::Session;
use crate::acked_stream::{self, Conn};

/// hex(sha512(salt + hostname + nonce + key)).
pub(super) fn digest(salt: &str, hostname: &str, nonce: &str, key: &str) -> String {
    let mut h = Sha512::new();
    for part in [salt, hostname, nonce, key] {
        h.update(part.as_bytes());
    }
    hex(&h.finalize())
}

/// Runs the handshake on a new connection; `Ok(true)` when the client
/// proved the key (the bytes after its PING stay in `buf`).
pub(super) async fn run(s: &Session, key: &str, conn: &mut Box<dyn Conn>, buf: &mut Vec<u8>) -> Result<bool, BoxError> {
    let nonce = random_hex(16)?;
    conn.write_all(&helo(&nonce)).await?;
    conn.flush().await?;
    let (ping, n) = loop {
        match next_ping(buf, &s.limits) {
            Ok(Some(p)) => break p,
            Ok(None) => {
                if acked_stream::read_more(conn, buf, s.idle, &s.idle_closed, &s.cx).await? == 0 {
                    return Ok(false);
                }
            }
            Err(e) => {
                s.auth_failures.inc();
                tracing::warn!(source = %s.cx.id, error = %e, "fluent_forward: bad handshake, connection closed");
                return Ok(false);
            }
        }
    };
    buf.drain(..n);
    let expected = digest(&ping.salt, &ping.hostname, &nonce, key);
    if !ct_eq(expected.as_bytes(), ping.digest.as_bytes()) {
        s.auth_failures.inc();
        tracing::warn!(source = %s.cx.id, client = %ping.hostname, "fluent_forward: shared key mismatch, connection closed");
        conn.write_all(&pong(false, "shared_key mismatch", &s.self_hostname, "")).await?;
        conn.flush().await?;
        return Ok(false);
    }
    let ours = digest(&ping.salt, &s.self_hostname, &nonce, key);
    conn.write_all(&pong(true, "", &s.self_hostname, &ours)).await?;
    conn.flush().await?;
    Ok(true)
}
