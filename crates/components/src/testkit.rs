//! Shared test helpers: build a component from a TOML snippet, run a source
//! into a capture, push events through a filter or a sink — so every
//! component is tested the same way.

use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use sluice_core::component::{
    BoxError, BuildContext, Closed, Filter, FilterSpec, Output, Sink, SinkSpec, Source, SourceContext, SourceSpec,
};
use sluice_core::config::ConfigError;
use sluice_core::metrics::ComponentMetrics;
use sluice_core::{AckToken, Event};
use tokio_util::sync::CancellationToken;

fn cx(kind: &'static str, name: &str) -> BuildContext {
    let mut cx = BuildContext::for_test(kind, name);
    cx.path = format!("test.{name}");
    // A data directory per component built, so what one test's component
    // keeps there (the http source's bulk ids ledger) never reaches another.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    cx.data_dir = std::env::temp_dir().join(format!("sluice-testkit-{}-{n}", std::process::id()));
    cx
}

/// Builds a source from a TOML table body with `data_dir` as the node's
/// data directory (a source that keeps state there, started again).
pub fn build_source_in(
    spec: &SourceSpec,
    toml_body: &str,
    data_dir: &std::path::Path,
) -> Result<Box<dyn Source>, ConfigError> {
    let v: toml::Value = toml::from_str(toml_body).map_err(|e| ConfigError::new("test", e.to_string()))?;
    let mut c = cx("source", spec.name);
    c.data_dir = data_dir.to_path_buf();
    (spec.build)(v, &c)
}

/// Builds a source from a TOML table body.
pub fn build_source(spec: &SourceSpec, toml_body: &str) -> Result<Box<dyn Source>, ConfigError> {
    let v: toml::Value = toml::from_str(toml_body).map_err(|e| ConfigError::new("test", e.to_string()))?;
    (spec.build)(v, &cx("source", spec.name))
}

/// Builds a filter from a TOML table body.
pub fn build_filter(spec: &FilterSpec, toml_body: &str) -> Result<Box<dyn Filter>, ConfigError> {
    let v: toml::Value = toml::from_str(toml_body).map_err(|e| ConfigError::new("test", e.to_string()))?;
    (spec.build)(v, &cx("filter", spec.name))
}

/// Builds a sink from a TOML table body.
pub fn build_sink(spec: &SinkSpec, toml_body: &str) -> Result<Box<dyn Sink>, ConfigError> {
    let v: toml::Value = toml::from_str(toml_body).map_err(|e| ConfigError::new("test", e.to_string()))?;
    (spec.build)(v, &cx("sink", spec.name))
}

/// An [`Output`] that keeps everything it is given.
#[derive(Default)]
pub struct Capture {
    /// Events received so far.
    pub events: Mutex<Vec<Event>>,
}

#[async_trait]
impl Output for Capture {
    async fn send(&self, events: Vec<Event>) -> Result<(), Closed> {
        self.events.lock().extend(events);
        Ok(())
    }
}

/// An [`Output`] that keeps the events and, for [`Output::send_acked`], the
/// acknowledgement tokens, which the test resolves when and in the order it
/// wants (a slow or failing next hop).
#[derive(Default)]
pub struct AckCapture {
    /// Events received so far.
    pub events: Mutex<Vec<Event>>,
    /// Tokens not yet resolved, in the order their batches arrived.
    pub tokens: Mutex<Vec<AckToken>>,
}

#[async_trait]
impl Output for AckCapture {
    async fn send(&self, events: Vec<Event>) -> Result<(), Closed> {
        self.events.lock().extend(events);
        Ok(())
    }

    async fn send_acked(&self, events: Vec<Event>, ack: AckToken) -> Result<(), Closed> {
        self.events.lock().extend(events);
        self.tokens.lock().push(ack);
        Ok(())
    }
}

/// A source context writing into `capture`, with its own metrics and shutdown token.
pub fn source_context(capture: Arc<Capture>) -> (SourceContext, CancellationToken, Arc<ComponentMetrics>) {
    output_context(capture)
}

/// A source context writing into any output.
pub fn output_context(out: Arc<dyn Output>) -> (SourceContext, CancellationToken, Arc<ComponentMetrics>) {
    let shutdown = CancellationToken::new();
    let metrics = Arc::new(ComponentMetrics::new("source", "test", "test"));
    let cx = SourceContext {
        id: "test".into(),
        pipeline: "test".into(),
        out,
        shutdown: shutdown.clone(),
        metrics: Arc::clone(&metrics),
    };
    (cx, shutdown, metrics)
}

/// Runs a finite source to completion and returns what it emitted.
pub async fn run_source(spec: &SourceSpec, toml_body: &str) -> Result<Vec<Event>, BoxError> {
    let src = build_source(spec, toml_body)?;
    let cap = Arc::new(Capture::default());
    let (cx, _shutdown, _m) = source_context(Arc::clone(&cap));
    src.run(cx).await?;
    let out = std::mem::take(&mut *cap.events.lock());
    Ok(out)
}

/// Runs events through a filter built from `toml_body`.
pub fn run_filter(spec: &FilterSpec, toml_body: &str, mut events: Vec<Event>) -> Vec<Event> {
    #[allow(clippy::unwrap_used)]
    let f = build_filter(spec, toml_body).unwrap();
    f.process(&mut events);
    events
}

/// The registry contract every component list must keep: names are unique,
/// [`find`-style lookup](crate::sources::find) returns each spec, and every
/// spec's `example` builds.
pub fn check_registry<T: ?Sized>(
    specs: &[&sluice_core::component::Spec<T>],
    build: fn(&sluice_core::component::Spec<T>, &str) -> Result<Box<T>, ConfigError>,
) {
    let mut names: Vec<&str> = specs.iter().map(|s| s.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), specs.len(), "duplicate component names");
    for spec in specs {
        if let Err(e) = build(spec, spec.example) {
            panic!("example of {} does not build: {e}", spec.name);
        }
    }
}

/// Builds each case `(type, line, error)` of `specs` with `line` put before
/// the type's example, and checks that it fails with exactly `error`.
pub fn check_refused<T: ?Sized>(
    specs: &[&sluice_core::component::Spec<T>],
    build: fn(&sluice_core::component::Spec<T>, &str) -> Result<Box<T>, ConfigError>,
    cases: &[(&str, &str, &str)],
) {
    for (name, line, want) in cases {
        let spec = specs.iter().find(|s| s.name == *name).unwrap_or_else(|| panic!("no component {name}"));
        match build(spec, &format!("{line}\n{}", spec.example)) {
            Ok(_) => panic!("{name} with {line} built"),
            Err(e) => assert_eq!(e.to_string(), *want, "{name} with {line}"),
        }
    }
}

/// Builds `spec` with each case's `(body, prefix)` and checks that it fails
/// with an error that starts with `prefix` (the key path and message).
pub fn check_errors<T: ?Sized>(
    spec: &sluice_core::component::Spec<T>,
    build: fn(&sluice_core::component::Spec<T>, &str) -> Result<Box<T>, ConfigError>,
    cases: &[(&str, &str)],
) {
    for (body, prefix) in cases {
        match build(spec, body) {
            Ok(_) => panic!("{} with {body:?} built", spec.name),
            Err(e) => assert!(e.to_string().starts_with(prefix), "{body:?}: {e}"),
        }
    }
}

/// A listening source started on a free loopback port (`address` is
/// prepended to `toml_body`) writing into an [`AckCapture`].
pub struct Listening {
    /// The address it listens on.
    pub addr: std::net::SocketAddr,
    /// What it queued, and the tokens to resolve.
    pub cap: Arc<AckCapture>,
    /// Cancel to stop it.
    pub shutdown: CancellationToken,
    /// Its counters.
    pub metrics: Arc<ComponentMetrics>,
    /// The running source.
    pub task: tokio::task::JoinHandle<Result<(), BoxError>>,
}

/// A started source as a tuple: address, capture, shutdown, counters, task.
pub type Started = (
    std::net::SocketAddr,
    Arc<AckCapture>,
    CancellationToken,
    Arc<ComponentMetrics>,
    tokio::task::JoinHandle<Result<(), BoxError>>,
);

/// [`listening_source`] with the identity `group = "acme"`, `host =
/// "pinned"` and the `extra` lines, as a [`Started`] tuple.
pub fn listening_pinned(spec: &SourceSpec, extra: &str) -> Started {
    let l = listening_source(spec, &format!("group = \"acme\"\nhost = \"pinned\"\n{extra}"));
    (l.addr, l.cap, l.shutdown, l.metrics, l.task)
}

/// Starts `spec` listening (see [`Listening`]).
pub fn listening_source(spec: &SourceSpec, toml_body: &str) -> Listening {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a probe port");
    let addr = probe.local_addr().expect("probe address");
    drop(probe);
    let src = build_source(spec, &format!("address = \"{addr}\"\n{toml_body}")).expect("source builds");
    let cap = Arc::new(AckCapture::default());
    let (cx, shutdown, metrics) = output_context(Arc::clone(&cap) as Arc<dyn Output>);
    let task = tokio::spawn(src.run(cx));
    Listening { addr, cap, shutdown, metrics, task }
}

/// Connects to `addr`, retrying while the listener comes up.
pub async fn connect(addr: std::net::SocketAddr) -> tokio::net::TcpStream {
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(s) => break s,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
        }
    }
}

/// A self-signed certificate for `localhost` in `dir`, and the `tls` line
/// of a listening component's config that serves it.
#[cfg(test)]
pub fn tls_listen_config(dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let (cert, key) = crate::tls::self_signed(dir);
    let line = format!("tls = {{ cert = \"{}\", key = \"{}\" }}", cert.display(), key.display());
    (cert, line)
}

/// A TLS connection to `addr` that trusts only the certificate in `ca`
/// (verified as `localhost`), retrying while the listener comes up.
#[cfg(test)]
pub async fn connect_tls(
    addr: std::net::SocketAddr,
    ca: &std::path::Path,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let t =
        crate::tls::ClientTls { ca: ca.to_path_buf(), server_name: Some("localhost".into()), cert: None, key: None };
    let (connector, name) = crate::tls::connector(&t, &addr.to_string()).expect("client TLS config");
    // Bounded: a listener that does not speak TLS never answers the hello.
    let handshake = connector.connect(name, connect(addr).await);
    tokio::time::timeout(std::time::Duration::from_secs(5), handshake)
        .await
        .expect("TLS handshake within 5 s")
        .expect("TLS handshake")
}

/// The TLS listener check the stream sources share: sends `over_tls` to
/// `l` over TLS (trusting `ca`), then `plain` in plain text to the same
/// port; waits for `want` events and one failed handshake, stops the
/// source, and gives back the events' messages.
#[cfg(test)]
pub async fn tls_then_plain_text(
    l: &mut Listening,
    ca: &std::path::Path,
    over_tls: &[u8],
    plain: &[u8],
    want: usize,
) -> Vec<String> {
    use tokio::io::AsyncWriteExt;
    let mut s = connect_tls(l.addr, ca).await;
    s.write_all(over_tls).await.unwrap();
    s.shutdown().await.unwrap();
    // Plain text to the TLS port: a failed handshake, counted, no event.
    let mut p = connect(l.addr).await;
    p.write_all(plain).await.unwrap();
    wait_for(&format!("{want} events"), || l.cap.events.lock().len() == want).await;
    wait_for("a failed handshake", || l.metrics.counter("tls_handshake_errors").get() == 1).await;
    l.shutdown.cancel();
    (&mut l.task).await.unwrap().unwrap();
    l.cap.events.lock().iter().map(|e| e.message().unwrap_or_default().to_owned()).collect()
}

/// Waits up to 5 s for `ok`, panicking with `what` after that.
pub async fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while !ok() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
