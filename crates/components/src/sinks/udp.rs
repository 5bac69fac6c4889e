//! `udp`: sends each event as one UDP datagram, ndjson or RFC 5424 syslog
//! (RFC 5426 transport).
//!
//! Why: classic syslog receivers and metrics/log relays listen on UDP, and
//! it never blocks the pipeline on a slow receiver.
//!
//! UDP is fire-and-forget: `Ok` means every datagram was handed to the kernel
//! (`send_to` returned), not that anything arrived — datagrams can be lost,
//! reordered or dropped by a receiver that is down, and nothing reports it.
//! Use `tcp` or `http` when delivery matters.
//!
//! Each datagram holds exactly one encoded event with no trailing newline
//! (the datagram is the frame); CR/LF inside a syslog MSG are kept. An event
//! whose encoding is longer than `max_datagram_bytes` (default 65,000; at
//! most 65,507, the IPv4 payload limit) is **skipped**, not truncated — a cut
//! JSON object would be unparseable — and counted in `oversized_datagrams`
//! (the first one is also logged). A send error returns `Err` and the runtime
//! retries the whole batch, so datagrams sent before the error are sent again.
//!
//! The destination `host:port` is resolved on the first write and again
//! after an error.

use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::Event;
use tokio::net::UdpSocket;

use super::encoding::{encode, Encoding};

/// Registry entry.
pub const SPEC: SinkSpec = SinkSpec {
    name: "udp",
    summary: "one datagram per event, ndjson or RFC 5424 syslog (fire-and-forget)",
    example: "address = \"127.0.0.1:514\"\nencoding = \"syslog\"\n",
    build,
};

/// Largest UDP payload over IPv4.
const MAX_UDP_PAYLOAD: u64 = 65_507;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Destination, `host:port`.
    address: String,
    /// `ndjson` (default) or `syslog`.
    #[serde(default = "default_encoding")]
    encoding: Encoding,
    /// Larger events are skipped and counted (`oversized_datagrams`).
    #[serde(default = "default_max_datagram")]
    max_datagram_bytes: ByteSize,
}

fn default_encoding() -> Encoding {
    Encoding::Ndjson
}
fn default_max_datagram() -> ByteSize {
    ByteSize(65_000)
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    crate::net::check_address(&c.address).map_err(|m| cx.error("address", m))?;
    if c.max_datagram_bytes.0 == 0 || c.max_datagram_bytes.0 > MAX_UDP_PAYLOAD {
        return Err(cx.error("max_datagram_bytes", format!("must be between 1 and {MAX_UDP_PAYLOAD}")));
    }
    Ok(Box::new(UdpSink {
        max: c.max_datagram_bytes.0 as usize,
        oversized: cx.metrics.counter("oversized_datagrams"),
        metrics: Arc::clone(&cx.metrics),
        c,
        socket: None,
        buf: Vec::with_capacity(8192),
        warned: false,
    }))
}

struct UdpSink {
    c: Config,
    max: usize,
    metrics: Arc<ComponentMetrics>,
    oversized: Arc<Counter>,
    socket: Option<(UdpSocket, SocketAddr)>,
    buf: Vec<u8>,
    warned: bool,
}

impl UdpSink {
    async fn open(&self) -> Result<(UdpSocket, SocketAddr), BoxError> {
        let addr = &self.c.address;
        let target = tokio::net::lookup_host(addr)
            .await
            .map_err(|e| format!("resolve {addr}: {e}"))?
            .next()
            .ok_or_else(|| format!("resolve {addr}: no address"))?;
        let local: SocketAddr = if target.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
        let socket = UdpSocket::bind(local).await.map_err(|e| format!("bind {local}: {e}"))?;
        Ok((socket, target))
    }
}

#[async_trait]
impl Sink for UdpSink {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        if events.is_empty() {
            return Ok(());
        }
        let (socket, target) = match self.socket.take() {
            Some(s) => s,
            None => self.open().await?,
        };
        for e in events {
            self.buf.clear();
            encode(self.c.encoding, e, false, &mut self.buf);
            if self.buf.len() > self.max {
                self.oversized.inc();
                if !self.warned {
                    self.warned = true;
                    tracing::warn!(
                        bytes = self.buf.len(),
                        max_datagram_bytes = self.max,
                        "udp sink: event larger than max_datagram_bytes skipped (counted in oversized_datagrams; further ones are not logged)"
                    );
                }
                continue;
            }
            // On error the socket is dropped: the retry resolves and binds again.
            let n = socket.send_to(&self.buf, target).await.map_err(|e| format!("send to {target}: {e}"))?;
            self.metrics.bytes_out.add(n as u64);
        }
        self.socket = Some((socket, target));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::build_sink;
    use sluice_core::codec::to_json_string;
    use std::time::Duration;

    async fn recv_all(sock: &UdpSocket) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 70_000];
        while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(300), sock.recv(&mut buf)).await {
            out.push(buf[..n].to_vec());
        }
        out
    }

    #[tokio::test]
    async fn one_datagram_per_event_and_oversized_are_skipped_and_counted() {
        let rx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = rx.local_addr().unwrap();
        let v: toml::Value = toml::from_str(&format!("address = \"{addr}\"\nmax_datagram_bytes = 200")).unwrap();
        let cx = BuildContext::for_test("sink", "udp");
        let mut s = (SPEC.build)(v, &cx).unwrap();
        let mut evs: Vec<Event> = (0..20).map(|i| Event::from_message(format!("dgram {i:02}"))).collect();
        evs.insert(5, Event::from_message("x".repeat(300)));
        evs.insert(12, Event::from_message("y".repeat(300)));
        s.write(&evs[..11]).await.unwrap();
        s.write(&evs[11..]).await.unwrap();
        let got = recv_all(&rx).await;
        let expected: Vec<Vec<u8>> = evs
            .iter()
            .filter(|e| e.message().is_some_and(|m| m.len() < 100))
            .map(|e| to_json_string(e).into_bytes())
            .collect();
        assert_eq!(expected.len(), 20);
        assert_eq!(got, expected);
        assert_eq!(cx.metrics.counter("oversized_datagrams").get(), 2);
        assert_eq!(cx.metrics.bytes_out.get(), expected.iter().map(|d| d.len() as u64).sum::<u64>());
    }

    #[tokio::test]
    async fn syslog_datagrams_keep_multiline_messages() {
        let rx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = rx.local_addr().unwrap();
        let mut s = build_sink(&SPEC, &format!("address = \"{addr}\"\nencoding = \"syslog\"")).unwrap();
        let mut e = Event::from_message("first\nsecond");
        e.timestamp = 1_700_000_000_000_000_000;
        e.fields_mut().insert("severity", sluice_core::Value::from("warning"));
        s.write(&[e]).await.unwrap();
        let got = recv_all(&rx).await;
        assert_eq!(got, vec![b"<12>1 2023-11-14T22:13:20Z - sluice - - - first\nsecond".to_vec()]);
    }

    #[test]
    fn config_errors_name_the_key() {
        let cases = [
            ("address = \"127.0.0.1:514\"\nmax_datagram_bytes = 70000", "test.udp.max_datagram_bytes: "),
            ("address = \"127.0.0.1\"", "test.udp.address: "),
            ("address = \"h:1\"\nencoding = \"xml\"", "test.udp.encoding: "),
        ];
        crate::testkit::check_errors(&SPEC, build_sink, &cases);
        assert!(build_sink(&SPEC, SPEC.example).is_ok());
    }
}
