//! `syslog_unix`: syslog messages on a local unix socket — the host's
//! `/dev/log`, where `logger`, glibc's `syslog(3)` and most daemons write —
//! RFC 5424 or RFC 3164 (detected per message), mapped to events exactly as
//! `syslog_udp` / `syslog_tcp` do ([`crate::syslog_event`]).
//!
//! Two kinds of socket, as on real hosts:
//! - `mode = "datagram"` (default, what `/dev/log` is): one message per
//!   datagram; a trailing NUL or newline is removed.
//! - `mode = "stream"`: a listening socket; each connection is framed per
//!   frame by newline or RFC 6587 octet counting (the decoder of
//!   `syslog_tcp`), and a NUL byte also ends a frame (glibc's `syslog(3)`
//!   over a stream socket ends each message with one).
//!
//! The socket file is created at start (a stale *socket* left at `path` is
//! replaced; any other kind of file there is an error, never deleted), given
//! `socket_mode` (default `0666`: every local user may log), and removed at
//! shutdown. `peer` is `"unix"`.
//!
//! Back-pressure: what one receive (or one read of a stream) decoded is one
//! batch, and the socket is not read again before the queue took it; a
//! datagram sender then waits in `send` (unix datagram sockets block the
//! sender when the receive queue is full — nothing is lost), a stream
//! sender through the socket buffer.
//!
//! Counters: `events_in`, `events_out`, `events_failed` (parse failures),
//! `bytes_in`, `errors`, `oversized_frames` (datagrams and stream frames
//! cut at `max_message_bytes` and tagged `_oversized`), `framing_errors`,
//! `connections`.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError};
use sluice_core::metrics::Counter;
use sluice_core::value::Value;
use sluice_parsers::framing::Decoder;
use tokio::io::AsyncReadExt;
use tokio::net::{UnixDatagram, UnixListener, UnixStream};

use crate::syslog_event::{DateKeys, Mapper, OVERSIZED};
use crate::syslog_stream::{send, StreamFraming};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "syslog_unix",
    summary: "syslog (RFC 5424 / RFC 3164) on a unix socket (/dev/log style), datagram or stream",
    example: "path = \"/tmp/sluice-example-log.sock\"\nmode = \"datagram\"\n",
    build,
};

/// The kind of socket.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `SOCK_DGRAM`: one message per datagram.
    Datagram,
    /// `SOCK_STREAM`: newline / NUL / octet-counted frames.
    Stream,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Socket path, e.g. `/dev/log`.
    path: PathBuf,
    /// `datagram` (default) or `stream`.
    #[serde(default = "default_mode")]
    mode: Mode,
    /// Permissions of the socket file, octal (default `"0666"`).
    #[serde(default = "default_socket_mode")]
    socket_mode: String,
    /// Longest message; longer ones are cut and tagged `_oversized`, and counted.
    #[serde(default = "default_max_message")]
    max_message_bytes: ByteSize,
    /// Year for RFC 3164 timestamps (default: current, with rollover).
    year: Option<i32>,
    /// Zone for RFC 3164 timestamps (`UTC`, `+02:00`); default UTC.
    timezone: Option<String>,
}

fn default_mode() -> Mode {
    Mode::Datagram
}
fn default_socket_mode() -> String {
    "0666".into()
}
fn default_max_message() -> ByteSize {
    ByteSize(64 << 10)
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    if c.path.as_os_str().is_empty() {
        return Err(cx.error("path", "must not be empty"));
    }
    let socket_mode =
        u32::from_str_radix(c.socket_mode.trim_start_matches("0o"), 8).ok().filter(|m| *m <= 0o777).ok_or_else(
            || cx.error("socket_mode", format!("expected octal permissions such as \"0660\", got {:?}", c.socket_mode)),
        )?;
    if c.max_message_bytes.0 == 0 || c.max_message_bytes.0 > (16 << 20) {
        return Err(cx.error("max_message_bytes", "must be between 1 byte and 16MiB"));
    }
    let opts = DateKeys { year: c.year, timezone: c.timezone }.options(cx)?;
    Ok(Box::new(SyslogUnix {
        path: c.path,
        mode: c.mode,
        socket_mode,
        max_message: c.max_message_bytes.0 as usize,
        opts,
    }))
}

struct SyslogUnix {
    path: PathBuf,
    mode: Mode,
    socket_mode: u32,
    max_message: usize,
    opts: sluice_parsers::syslog::Options,
}

/// Removes a stale socket at `path`; refuses to touch anything else.
fn clear_stale(path: &PathBuf) -> Result<(), BoxError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(|e| format!("cannot remove stale socket {}: {e}", path.display()))?;
            Ok(())
        }
        Ok(_) => Err(format!("{} exists and is not a socket; not replacing it", path.display()).into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot inspect {}: {e}", path.display()).into()),
    }
}

/// Removes the socket file when the source stops.
struct Unlink(PathBuf);
impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[async_trait]
impl Source for SyslogUnix {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        clear_stale(&self.path)?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let mapper = Mapper {
            opts: self.opts,
            source: Arc::from(format!("syslog_unix:{}", self.path.display())),
            metrics: Arc::clone(&cx.metrics),
        };
        let oversized = cx.metrics.counter("oversized_frames");
        match self.mode {
            Mode::Datagram => {
                let sock = UnixDatagram::bind(&self.path).map_err(|e| format!("bind {}: {e}", self.path.display()))?;
                let _unlink = Unlink(self.path.clone());
                set_mode(&self.path, self.socket_mode)?;
                tracing::info!(source = %cx.id, path = %self.path.display(), mode = "datagram", "syslog_unix source listening");
                datagrams(sock, self.max_message, &mapper, &oversized, &cx).await
            }
            Mode::Stream => {
                let listener =
                    UnixListener::bind(&self.path).map_err(|e| format!("bind {}: {e}", self.path.display()))?;
                let _unlink = Unlink(self.path.clone());
                set_mode(&self.path, self.socket_mode)?;
                tracing::info!(source = %cx.id, path = %self.path.display(), mode = "stream", "syslog_unix source listening");
                let shared = Arc::new(StreamShared {
                    mapper,
                    max_message: self.max_message,
                    oversized,
                    framing_errors: cx.metrics.counter("framing_errors"),
                });
                let connections = cx.metrics.counter("connections");
                let mut tasks = tokio::task::JoinSet::new();
                loop {
                    tokio::select! {
                        _ = cx.shutdown.cancelled() => break,
                        Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                        accepted = listener.accept() => {
                            let stream = match accepted {
                                Ok((s, _)) => s,
                                Err(e) => {
                                    cx.metrics.errors.inc();
                                    tracing::warn!(source = %cx.id, error = %e, "accept failed");
                                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                                    continue;
                                }
                            };
                            connections.inc();
                            let cx = cx.clone();
                            let shared = Arc::clone(&shared);
                            tasks.spawn(async move {
                                if let Err(e) = read_stream(stream, &cx, &shared).await {
                                    cx.metrics.errors.inc();
                                    tracing::debug!(source = %cx.id, error = %e, "connection ended with error");
                                }
                            });
                        }
                    }
                }
                while tasks.join_next().await.is_some() {}
                Ok(())
            }
        }
    }
}

fn set_mode(path: &PathBuf, mode: u32) -> Result<(), BoxError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("chmod {}: {e}", path.display()).into())
}

fn peer() -> Value {
    Value::from("unix")
}

/// Receives datagrams until shutdown; each wake-up takes every datagram
/// already queued (up to 512) as one batch.
async fn datagrams(
    sock: UnixDatagram,
    max: usize,
    mapper: &Mapper,
    oversized: &Counter,
    cx: &SourceContext,
) -> Result<(), BoxError> {
    let peer = peer();
    let mut buf = vec![0u8; max + 1];
    loop {
        let first = tokio::select! {
            _ = cx.shutdown.cancelled() => return Ok(()),
            r = sock.recv(&mut buf) => r,
        };
        let mut events = Vec::new();
        let mut next = Some(first);
        while let Some(r) = next.take() {
            match r {
                Ok(n) => {
                    cx.metrics.bytes_in.add(n as u64);
                    let mut msg = &buf[..n.min(max)];
                    while let Some((b'\0' | b'\n' | b'\r', rest)) = msg.split_last() {
                        msg = rest;
                    }
                    if !msg.is_empty() {
                        let mut e = mapper.event(msg, &peer);
                        if n > max {
                            oversized.inc();
                            e.add_tag(OVERSIZED);
                        }
                        events.push(e);
                    }
                }
                Err(e) => {
                    cx.metrics.errors.inc();
                    tracing::warn!(source = %cx.id, error = %e, "receive failed");
                }
            }
            if events.len() < 512 {
                match sock.try_recv(&mut buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    r => next = Some(r),
                }
            }
        }
        if !events.is_empty() {
            let count = events.len() as u64;
            cx.metrics.events_in.add(count);
            cx.out.send(events).await?;
            cx.metrics.events_out.add(count);
        }
    }
}

/// A stream connection's framing, shared by all connections.
type StreamShared = StreamFraming;

/// Reads one stream connection until EOF or shutdown.
async fn read_stream(mut stream: UnixStream, cx: &SourceContext, shared: &StreamShared) -> Result<(), BoxError> {
    let peer = peer();
    let mut dec = Decoder::new(shared.max_message);
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(64 * 1024);
        }
        let old = buf.len();
        let n = tokio::select! {
            _ = cx.shutdown.cancelled() => 0,
            r = stream.read_buf(&mut buf) => r?,
        };
        // glibc's syslog(3) ends stream messages with NUL: a frame end too.
        for b in &mut buf[old..] {
            if *b == 0 {
                *b = b'\n';
            }
        }
        let eof = n == 0;
        cx.metrics.bytes_in.add(n as u64);
        let mut events = Vec::new();
        let pos = shared.decode(&mut dec, &buf, eof, &peer, &mut events);
        buf.drain(..pos);
        send(cx, events).await?;
        if eof {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{build_source, source_context, Capture};
    use sluice_core::Event;
    use std::process::Command;
    use std::time::Duration;

    async fn wait_for(cap: &Capture, n: usize) -> Vec<Event> {
        for _ in 0..500 {
            if cap.events.lock().len() >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // A little longer, to see any extra event.
        tokio::time::sleep(Duration::from_millis(100)).await;
        cap.events.lock().clone()
    }

    /// Runs the real `logger` (util-linux) on a blocking thread: a datagram
    /// socket's queue is short (`net.unix.max_dgram_qlen`), so logger waits
    /// for the source to receive.
    async fn logger(sock: &std::path::Path, args: &[&str], input: &str) {
        let sock = sock.to_path_buf();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let input = input.to_string();
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = Command::new("logger")
                .arg("--socket")
                .arg(&sock)
                .args(&args)
                .stdin(std::process::Stdio::piped())
                .spawn()
                .expect("logger (util-linux) is needed");
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
            let st = child.wait().unwrap();
            assert!(st.success(), "logger failed: {st}");
        })
        .await
        .unwrap();
    }

    async fn start(
        mode: &str,
    ) -> (
        tempfile::TempDir,
        PathBuf,
        Arc<Capture>,
        tokio_util::sync::CancellationToken,
        Arc<sluice_core::metrics::ComponentMetrics>,
        tokio::task::JoinHandle<Result<(), BoxError>>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("log.sock");
        let src =
            build_source(&SPEC, &format!("path = {:?}\nmode = {mode:?}\nyear = 2024", sock.to_str().unwrap())).unwrap();
        let cap = Arc::new(Capture::default());
        let (cx, shutdown, m) = source_context(Arc::clone(&cap));
        let task = tokio::spawn(src.run(cx));
        for _ in 0..200 {
            if sock.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        (dir, sock, cap, shutdown, m, task)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn logger_datagrams_rfc3164_and_5424() {
        let (_dir, sock, cap, shutdown, m, task) = start("datagram").await;
        let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666);
        let lines: String = (0..200).map(|i| format!("dgram line {i}\n")).collect();
        logger(&sock, &["--rfc3164", "-t", "myapp", "-p", "local3.warning"], &lines).await;
        logger(&sock, &["--rfc5424", "-t", "other", "--msgid", "M1"], "five four two four\n").await;
        let events = wait_for(&cap, 201).await;
        assert_eq!(events.len(), 201);
        for (i, e) in events[..200].iter().enumerate() {
            assert_eq!(e.message(), Some(format!("dgram line {i}").as_str()));
            assert_eq!(e.fields().get("appname").and_then(Value::as_str), Some("myapp"));
            assert_eq!(e.fields().get("facility_label").and_then(Value::as_str), Some("local3"));
            assert_eq!(e.fields().get("severity_label").and_then(Value::as_str), Some("warning"));
            assert!(!e.has_tag("_syslogparsefailure"));
        }
        let last = &events[200];
        assert_eq!(last.message(), Some("five four two four"));
        assert_eq!(last.fields().get("syslog_version").and_then(Value::as_u64), Some(1));
        assert_eq!(last.fields().get("msgid").and_then(Value::as_str), Some("M1"));
        assert_eq!(last.fields().get("peer").and_then(Value::as_str), Some("unix"));
        assert_eq!(m.events_failed.get(), 0);
        shutdown.cancel();
        task.await.unwrap().unwrap();
        assert!(!sock.exists(), "the socket is removed at shutdown");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn logger_stream_newline_and_octet_counted() {
        let (_dir, sock, cap, shutdown, m, task) = start("stream").await;
        let lines: String = (0..100).map(|i| format!("stream line {i}\n")).collect();
        logger(&sock, &["--tcp", "--rfc5424", "-t", "s1"], &lines).await;
        logger(&sock, &["--tcp", "--rfc5424", "--octet-count", "-t", "s2"], &lines).await;
        let events = wait_for(&cap, 200).await;
        assert_eq!(events.len(), 200);
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.message(), Some(format!("stream line {}", i % 100).as_str()), "event {i}");
            let app = if i < 100 { "s1" } else { "s2" };
            assert_eq!(e.fields().get("appname").and_then(Value::as_str), Some(app));
        }
        assert_eq!(m.events_failed.get(), 0);
        assert_eq!(m.counter("connections").get(), 2);
        shutdown.cancel();
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn nul_terminated_stream_messages_and_a_non_socket_path() {
        let (_dir, sock, cap, shutdown, _m, task) = start("stream").await;
        let mut s = UnixStream::connect(&sock).await.unwrap();
        use tokio::io::AsyncWriteExt;
        s.write_all(b"<13>Jan  5 10:00:00 host app: one\0<13>Jan  5 10:00:01 host app: two\0").await.unwrap();
        drop(s);
        let events = wait_for(&cap, 2).await;
        let msgs: Vec<&str> = events.iter().filter_map(Event::message).collect();
        assert_eq!(msgs, ["one", "two"]);
        shutdown.cancel();
        task.await.unwrap().unwrap();

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("regular");
        std::fs::write(&file, b"keep me").unwrap();
        let src = build_source(&SPEC, &format!("path = {:?}", file.to_str().unwrap())).unwrap();
        let (cx, _s, _m) = source_context(Arc::new(Capture::default()));
        let err = src.run(cx).await.unwrap_err().to_string();
        assert!(err.contains("is not a socket"), "{err}");
        assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    }

    #[test]
    fn config_errors() {
        let e = build_source(&SPEC, "path = \"/tmp/x.sock\"\nsocket_mode = \"rwx\"").err().unwrap().to_string();
        assert!(e.contains("socket_mode"), "{e}");
        let e = build_source(&SPEC, "path = \"/tmp/x.sock\"\nmode = \"seqpacket\"").err().unwrap().to_string();
        assert!(e.contains("mode"), "{e}");
    }
}
