//! Tests of the `sluice` component.

use super::*;
use crate::testkit::{build_source, source_context, Capture};
use sluice_protocol::compress::BatchEncoder;
use sluice_protocol::conn::write_frame;
use sluice_protocol::Compression;
use tokio::net::TcpStream;

const TOKEN: &str = "acme-secret-0123456789";
const OTHER: &str = "globex-secret-0123456789";

fn config(addr: SocketAddr, extra: &str) -> String {
    format!(
            "address = \"{addr}\"\nmax_in_flight = 4\n{extra}\n[tokens.acme]\ntoken = \"{TOKEN}\"\ngroup = \"acme\"\nsubgroups = [\"web\", \"db\"]\n[tokens.globex]\ntoken = \"{OTHER}\"\ngroup = \"globex\"\n"
        )
}

struct Server {
    addr: SocketAddr,
    cap: Arc<Capture>,
    shutdown: CancellationToken,
    metrics: Arc<sluice_core::metrics::ComponentMetrics>,
    task: tokio::task::JoinHandle<Result<(), BoxError>>,
}

impl Server {
    async fn start(extra: &str) -> Self {
        Self::start_with(extra, None).await
    }
    async fn start_with(extra: &str, out: Option<Arc<dyn sluice_core::component::Output>>) -> Self {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let src = build_source(&SPEC, &config(addr, extra)).unwrap();
        let cap = Arc::new(Capture::default());
        let (mut cx, shutdown, metrics) = source_context(Arc::clone(&cap));
        if let Some(o) = out {
            cx.out = o;
        }
        let task = tokio::spawn(src.run(cx));
        for _ in 0..200 {
            if TcpStream::connect(addr).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Self { addr, cap, shutdown, metrics, task }
    }
    fn counter(&self, name: &'static str) -> u64 {
        self.metrics.counter(name).get()
    }
    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}

struct Client {
    r: FrameReader<tokio::net::tcp::OwnedReadHalf>,
    w: tokio::net::tcp::OwnedWriteHalf,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Self {
        let (r, w) = TcpStream::connect(addr).await.unwrap().into_split();
        Self { r: FrameReader::new(r, 1 << 20), w }
    }
    async fn hello(addr: SocketAddr, token: &str, group: &str, subgroup: &str, mode: Mode) -> (Self, Frame) {
        let mut c = Self::connect(addr).await;
        let h = Hello {
            min_version: 1,
            max_version: 3,
            mode,
            compressions: 0b111,
            token: token.into(),
            group: group.into(),
            subgroup: subgroup.into(),
            host: "host-1".into(),
            agent: "test".into(),
        };
        c.send(&Frame::Hello(h)).await;
        let reply = c.recv().await.expect("a reply to HELLO");
        (c, reply)
    }
    async fn send(&mut self, f: &Frame) {
        write_frame(&mut self.w, f).await.unwrap();
    }
    async fn recv(&mut self) -> Option<Frame> {
        tokio::time::timeout(Duration::from_secs(5), self.r.read()).await.expect("no frame within 5s").ok().flatten()
    }
    async fn batch(&mut self, id: u64, events: &[Event], c: Compression) {
        let mut enc = BatchEncoder::new(c, 1).unwrap();
        let mut buf = Vec::new();
        enc.encode(id, events, &mut buf).unwrap();
        self.w.write_all(&buf).await.unwrap();
    }
}

fn events(from: usize, n: usize, id: Option<(&str, &str)>) -> Vec<Event> {
    (from..from + n)
        .map(|i| {
            let mut e = Event::from_message(format!("event {i}"));
            if let Some((g, s)) = id {
                e.identity = Arc::new(Identity::new(g, s, "other-host"));
            }
            e
        })
        .collect()
}

fn error_of(f: Option<Frame>) -> (ErrorCode, String) {
    match f {
        Some(Frame::Error { code, reason }) => (code, reason),
        other => panic!("expected an ERROR frame, got {other:?}"),
    }
}

#[tokio::test]
async fn batches_are_acked_after_queueing_with_identity_and_fill() {
    let srv = Server::start("").await;
    let (mut c, ok) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
    let Frame::HelloOk(ok) = ok else { panic!("{ok:?}") };
    assert_eq!((ok.version, ok.max_in_flight, ok.initial_credits), (1, 4, 0));
    for (i, codec) in [Compression::None, Compression::Zstd, Compression::Lz4].into_iter().enumerate() {
        c.batch(i as u64 + 10, &events(i * 100, 100, None), codec).await;
    }
    // An event carrying its own identity of the same token (subgroup db).
    c.batch(20, &events(300, 5, Some(("acme", "db"))), Compression::Lz4).await;
    for id in [10, 11, 12, 20] {
        match c.recv().await {
            Some(Frame::Ack(a)) => {
                assert_eq!(a.id, id);
                assert_eq!(a.status, AckStatus::Queued);
                assert_eq!(a.fill, sluice_protocol::FILL_UNKNOWN, "the capture output has no fill");
            }
            other => panic!("{other:?}"),
        }
    }
    c.send(&Frame::Ping { nonce: 77 }).await;
    assert_eq!(c.recv().await, Some(Frame::Pong { nonce: 77, fill: sluice_protocol::FILL_UNKNOWN }));
    let got = srv.cap.events.lock().clone();
    assert_eq!(got.len(), 305);
    for (i, e) in got.iter().enumerate() {
        assert_eq!(e.message(), Some(format!("event {i}").as_str()));
    }
    assert_eq!(*got[0].identity, Identity::new("acme", "web", "host-1"));
    assert_eq!(*got[304].identity, Identity::new("acme", "db", "other-host"));
    assert_eq!(srv.counter("batches"), 4);
    assert_eq!(srv.counter("acks"), 4);
    assert_eq!(srv.metrics.events_out.get(), 305);
    drop(c);
    srv.stop().await;
}

#[tokio::test]
async fn delivered_mode_acks_when_the_sinks_acknowledge_in_their_order_and_relays_identities() {
    const RELAY: &str = "relay-secret-0123456789";
    let cap = Arc::new(crate::testkit::AckCapture::default());
    let extra = format!("ack = \"delivered\"\n[tokens.relay]\ntoken = \"{RELAY}\"\ngroup = \"acme\"\nrelay = true");
    let srv = Server::start_with(&extra, Some(Arc::clone(&cap) as Arc<dyn sluice_core::component::Output>)).await;
    let (mut c, ok) = Client::hello(srv.addr, RELAY, "acme", "", Mode::Push).await;
    assert!(matches!(ok, Frame::HelloOk(_)), "{ok:?}");
    // A relay token carries other tenants' events with their identity.
    c.batch(1, &events(0, 10, Some(("globex", "db"))), Compression::Lz4).await;
    c.batch(2, &events(10, 10, None), Compression::Lz4).await;
    c.batch(3, &events(20, 10, None), Compression::Lz4).await;
    for _ in 0..200 {
        if cap.tokens.lock().len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Nothing is acknowledged while the sinks hold the batches.
    assert!(tokio::time::timeout(Duration::from_millis(200), c.r.read()).await.is_err(), "no ack before delivery");
    let mut tokens: Vec<sluice_core::AckToken> = std::mem::take(&mut *cap.tokens.lock());
    assert_eq!(tokens.len(), 3);
    // Delivered out of order, and one dropped undelivered: a retry ack.
    let t3 = tokens.pop().unwrap();
    let t2 = tokens.pop().unwrap();
    let t1 = tokens.pop().unwrap();
    t3.delivered();
    t1.delivered();
    drop(t2);
    let mut acks = Vec::new();
    for _ in 0..3 {
        match c.recv().await {
            Some(Frame::Ack(a)) => acks.push((a.id, a.status)),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(acks, [(3, AckStatus::Queued), (1, AckStatus::Queued), (2, AckStatus::Retry)]);
    assert_eq!(srv.counter("acks"), 2);
    assert_eq!(srv.counter("retry_acks"), 1);
    assert_eq!(srv.metrics.events_out.get(), 20);
    let got = cap.events.lock().clone();
    assert_eq!(*got[0].identity, Identity::new("globex", "db", "other-host"));
    assert_eq!(*got[10].identity, Identity::new("acme", "", "host-1"));
    drop(c);
    srv.stop().await;
}

#[tokio::test]
async fn bad_token_and_foreign_identities_are_refused() {
    let srv = Server::start("").await;
    let (_c, r) = Client::hello(srv.addr, "wrong-token-0123456789", "acme", "web", Mode::Push).await;
    assert_eq!(error_of(Some(r)), (ErrorCode::BadToken, "the token matches no configured token".into()));
    // acme's token claiming globex.
    let (_c, r) = Client::hello(srv.addr, TOKEN, "globex", "web", Mode::Push).await;
    let (code, reason) = error_of(Some(r));
    assert_eq!(code, ErrorCode::IdentityNotOwned);
    assert_eq!(
            reason,
            "identity group \"globex\" subgroup \"web\" is not owned by token \"acme\" (group \"acme\", subgroups [\"web\", \"db\"])"
        );
    // A subgroup outside the token's list.
    let (_c, r) = Client::hello(srv.addr, TOKEN, "acme", "finance", Mode::Push).await;
    assert_eq!(error_of(Some(r)).0, ErrorCode::IdentityNotOwned);
    // A valid hello, then a batch smuggling another group's events: the
    // whole batch is refused, nothing queued, the connection closed.
    let (mut c, ok) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
    assert!(matches!(ok, Frame::HelloOk(_)));
    let mut evs = events(0, 3, None);
    evs.extend(events(3, 1, Some(("globex", ""))));
    c.batch(1, &evs, Compression::Zstd).await;
    let (code, reason) = error_of(c.recv().await);
    assert_eq!(code, ErrorCode::IdentityNotOwned);
    assert!(reason.contains("group \"globex\""), "{reason}");
    assert_eq!(c.recv().await, None, "closed after the error");
    // globex's own token may write globex with any subgroup.
    let (_c, ok) = Client::hello(srv.addr, OTHER, "globex", "anything", Mode::Push).await;
    assert!(matches!(ok, Frame::HelloOk(_)));
    assert_eq!(srv.counter("auth_failures"), 1);
    assert_eq!(srv.counter("identity_refused"), 3);
    assert_eq!(srv.cap.events.lock().len(), 0);
    srv.stop().await;
}

#[tokio::test]
async fn garbage_oversized_truncated_and_corrupt_input_get_errors_and_counters() {
    let srv = Server::start("max_batch_bytes = \"64KiB\"").await;
    // Garbage instead of a HELLO.
    let mut c = Client::connect(srv.addr).await;
    c.w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let (code, reason) = error_of(c.recv().await);
    assert_eq!(code, ErrorCode::ProtocolViolation);
    assert_eq!(reason, "bad magic [47, 45]: not a sluice agent protocol frame");
    // An oversized batch announced after a good hello.
    let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
    c.w.write_all(&[b'S', b'L', 3, 0, 0, 0, 0, 1]).await.unwrap();
    let (code, reason) = error_of(c.recv().await);
    assert_eq!(code, ErrorCode::Oversized);
    assert_eq!(reason, "BATCH frame of 16777216 bytes exceeds the limit of 65560 bytes");
    // A batch declaring a raw length over the limit (a bomb is refused
    // before decompressing; bounded decompression is tested in sluice-protocol).
    let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
    let bomb = vec![0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0];
    let f = Frame::Batch(sluice_protocol::Batch {
        id: 1,
        events: 1,
        compression: Compression::Zstd,
        raw_len: 8 << 20,
        payload: bomb,
    });
    c.send(&f).await;
    let (code, reason) = error_of(c.recv().await);
    assert_eq!(code, ErrorCode::Oversized);
    assert_eq!(reason, "batch payload of 8388608 bytes exceeds max_batch_bytes (65536)");
    // A corrupt payload.
    let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
    let f = Frame::Batch(sluice_protocol::Batch {
        id: 2,
        events: 1,
        compression: Compression::None,
        raw_len: 4,
        payload: vec![1, 1, 0, 0],
    });
    c.send(&f).await;
    let (code, reason) = error_of(c.recv().await);
    assert_eq!(code, ErrorCode::CorruptPayload);
    assert!(reason.starts_with("corrupt batch payload: invalid"), "{reason}");
    // A frame cut short by the sender closing.
    let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
    c.w.write_all(&[b'S', b'L', 6, 0, 8, 0, 0, 0, 1, 2]).await.unwrap();
    c.w.shutdown().await.unwrap();
    let (code, reason) = error_of(c.recv().await);
    assert_eq!(code, ErrorCode::ProtocolViolation);
    assert_eq!(reason, "connection closed in the middle of a frame (10 of 16 bytes)");
    // The source still serves.
    let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Push).await;
    c.batch(3, &events(0, 2, None), Compression::Lz4).await;
    assert!(matches!(c.recv().await, Some(Frame::Ack(_))));
    assert_eq!(srv.counter("protocol_errors"), 2);
    assert_eq!(srv.counter("oversized_frames"), 2);
    assert_eq!(srv.counter("corrupt_batches"), 1);
    assert_eq!(srv.cap.events.lock().len(), 2);
    srv.stop().await;
}

/// An output that takes a batch only when a permit is added, with a settable fill.
struct Gate {
    permits: tokio::sync::Semaphore,
    fill: parking_lot::Mutex<f64>,
}

#[async_trait]
impl sluice_core::component::Output for Gate {
    async fn send(&self, _events: Vec<Event>) -> Result<(), sluice_core::component::Closed> {
        self.permits.acquire().await.map_err(|_| sluice_core::component::Closed)?.forget();
        Ok(())
    }
    fn fill_ratio(&self) -> Option<f64> {
        Some(*self.fill.lock())
    }
}

#[tokio::test]
async fn credit_mode_grants_by_queue_room_and_refuses_batches_without_credit() {
    let gate = Arc::new(Gate { permits: tokio::sync::Semaphore::new(0), fill: parking_lot::Mutex::new(0.0) });
    let srv = Server::start_with("initial_credits = 2", Some(gate.clone())).await;
    let (mut c, ok) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Credit).await;
    let Frame::HelloOk(ok) = ok else { panic!("{ok:?}") };
    assert_eq!((ok.mode, ok.initial_credits), (Mode::Credit, 2));
    // The queue takes nothing, so no ack and no credit comes back: the
    // third batch has no credit.
    for id in 1..4 {
        c.batch(id, &events(0, 1, None), Compression::None).await;
    }
    let (code, reason) = error_of(c.recv().await);
    assert_eq!((code, reason.as_str()), (ErrorCode::NoCredit, "batch 3 sent without a credit"));

    // A full queue (fill 0.8 over the 0.5 high-water mark) withholds the
    // credit of an acked batch; it is granted once the queue drains.
    *gate.fill.lock() = 0.8;
    let (mut c, _) = Client::hello(srv.addr, TOKEN, "acme", "web", Mode::Credit).await;
    gate.permits.add_permits(1);
    c.batch(10, &events(0, 1, None), Compression::None).await;
    let Some(Frame::Ack(a)) = c.recv().await else { panic!("no ack") };
    assert_eq!((a.id, a.status, a.fill, a.credits), (10, AckStatus::Queued, 8000, 0));
    *gate.fill.lock() = 0.1;
    assert_eq!(c.recv().await, Some(Frame::Credit { credits: 1, fill: 1000 }));
    assert_eq!(srv.counter("credits_granted"), 2 + 2 + 1);
    assert_eq!(srv.counter("protocol_errors"), 1, "the batch without credit");
    gate.permits.add_permits(100);
    srv.stop().await;
}

#[tokio::test]
async fn handshake_timeout_closes_silent_connections() {
    let srv = Server::start("handshake_timeout = \"200ms\"").await;
    let mut c = Client::connect(srv.addr).await;
    let (code, reason) = error_of(c.recv().await);
    assert_eq!((code, reason.as_str()), (ErrorCode::Timeout, "no HELLO within 200ms"));
    assert_eq!(srv.counter("timeouts"), 1);
    srv.stop().await;
}

#[test]
fn config_errors_name_the_key() {
    let e = build_source(&SPEC, "address = \"127.0.0.1:0\"\ntokens = {}").err().unwrap();
    assert_eq!(e.to_string(), "test.sluice.tokens: at least one token is needed: agents must authenticate");
    let e =
        build_source(&SPEC, "address = \"127.0.0.1:0\"\n[tokens.a]\ntoken = \"short\"\ngroup = \"g\"").err().unwrap();
    assert_eq!(e.to_string(), "test.sluice.tokens.a.token: the token must be at least 16 characters");
    let e = build_source(
        &SPEC,
        "address = \"127.0.0.1:0\"\n[tokens.a]\ntoken = \"0123456789abcdef\"\ngroup = \"g\"\nsubgroup = \"x\"",
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("unknown field `subgroup`"), "{e}");
    let e = build_source(
            &SPEC,
            "address = \"127.0.0.1:0\"\ntls = { cert = \"/nonexistent\", key = \"/x\" }\n[tokens.a]\ntoken = \"0123456789abcdef\"\ngroup = \"g\"",
        )
        .err()
        .unwrap();
    assert!(e.to_string().starts_with("test.sluice.tls.cert: cannot read /nonexistent"), "{e}");
}
