//! Tests of the `sluice` component.

use super::*;
use crate::sources::sluice as source;
use crate::testkit::{build_sink, build_source, source_context, Capture};
use sluice_core::Delivery;
use std::net::SocketAddr;

const TOKEN: &str = "acme-secret-0123456789";

struct Receiver {
    addr: SocketAddr,
    cap: Arc<Capture>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), BoxError>>,
}

fn free_addr() -> SocketAddr {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap()
}

async fn receiver(addr: SocketAddr) -> Receiver {
    let cfg = format!(
        "address = \"{addr}\"\nheartbeat_interval = \"1s\"\n[tokens.acme]\ntoken = \"{TOKEN}\"\ngroup = \"acme\"\n"
    );
    let src = build_source(&source::SPEC, &cfg).unwrap();
    let cap = Arc::new(Capture::default());
    let (cx, shutdown, _m) = source_context(Arc::clone(&cap));
    let task = tokio::spawn(src.run(cx));
    for _ in 0..200 {
        if TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Receiver { addr, cap, shutdown, task }
}

impl Receiver {
    async fn stop(self) -> Vec<Event> {
        self.shutdown.cancel();
        let _ = self.task.await;
        let v = self.cap.events.lock().clone();
        v
    }
}

fn sink_config(addrs: &[SocketAddr], algorithm: &str, extra: &str) -> String {
    let list: Vec<String> = addrs.iter().map(|a| format!("\"{a}\"")).collect();
    format!(
            "receivers = [{}]\nalgorithm = \"{algorithm}\"\ntoken = \"{TOKEN}\"\ngroup = \"acme\"\nsubgroup = \"web\"\nhost = \"agent-1\"\nbackoff_max = \"200ms\"\nheartbeat_interval = \"200ms\"\n{extra}",
            list.join(", ")
        )
}

fn batch(from: usize, n: usize) -> Vec<Event> {
    (from..from + n).map(|i| Event::from_message(format!("{i}"))).collect()
}

fn token() -> (AckToken, std::sync::mpsc::Receiver<Delivery>) {
    let _ = tracing_subscriber::fmt().with_test_writer().with_env_filter("debug").try_init();
    let (tx, rx) = std::sync::mpsc::channel();
    (
        AckToken::new(move |d| {
            let _ = tx.send(d);
        }),
        rx,
    )
}

fn seqs(events: &[Event]) -> Vec<usize> {
    let mut v: Vec<usize> = events.iter().map(|e| e.message().unwrap().parse().unwrap()).collect();
    v.sort_unstable();
    v
}

async fn wait_delivered(rx: &std::sync::mpsc::Receiver<Delivery>) -> Delivery {
    for _ in 0..1000 {
        if let Ok(d) = rx.try_recv() {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("ack never resolved");
}

/// Waits (at most 10 s) until the sink's dispatcher sees every receiver
/// of `addrs` up (the `state` gauge of `<sink id>@<address>`, 1 = up).
async fn wait_all_up(cx: &BuildContext, addrs: &[SocketAddr]) {
    for _ in 0..1000 {
        let comps = cx.registry.components();
        let up = addrs.iter().all(|a| {
            let id = format!("{}@{a}", cx.id);
            comps.iter().any(|(_, c)| c.id == id && c.gauges().iter().any(|(k, v)| *k == "state" && *v == 1))
        });
        if up {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("receivers {addrs:?} never all up");
}

#[tokio::test]
async fn round_robin_over_two_receivers_acks_every_batch_once() {
    let (a, b) = (receiver(free_addr()).await, receiver(free_addr()).await);
    let cx = BuildContext::for_test("sink", "out");
    let cfg = sink_config(&[a.addr, b.addr], "round_robin", "compression = \"lz4\"");
    let mut sink = (SPEC.build)(toml::from_str(&cfg).unwrap(), &cx).unwrap();
    // Both connected before the first batch: strict round robin then
    // alternates exactly (a receiver not up yet would be skipped).
    sink.start().await.unwrap();
    wait_all_up(&cx, &[a.addr, b.addr]).await;
    let mut rxs = Vec::new();
    for i in 0..20 {
        let (t, rx) = token();
        let mut ack = Some(t);
        sink.write_acked(&batch(i * 10, 10), &mut ack).await.unwrap();
        assert!(ack.is_none(), "the sink takes the token");
        rxs.push(rx);
    }
    for rx in &rxs {
        assert_eq!(wait_delivered(rx).await, Delivery::Delivered);
    }
    sink.close().await.unwrap();
    let (ea, eb) = (a.stop().await, b.stop().await);
    assert_eq!(ea.len() + eb.len(), 200);
    // Batch i (events 10i..10i+10) went to one receiver, batch i+1 to the other.
    let batches_of = |evs: &[Event]| -> Vec<usize> {
        let mut b: Vec<usize> = seqs(evs).iter().map(|s| s / 10).collect();
        b.dedup();
        b
    };
    let (ba, bb) = (batches_of(&ea), batches_of(&eb));
    assert_eq!((ea.len(), eb.len()), (100, 100), "strict round robin: {ba:?} / {bb:?}");
    assert!(ba.iter().zip(bb.iter()).all(|(x, y)| x.abs_diff(*y) == 1), "alternating: {ba:?} / {bb:?}");
    let mut all = ea.clone();
    all.extend(eb);
    assert_eq!(seqs(&all), (0..200).collect::<Vec<_>>());
    assert_eq!(*ea[0].identity, sluice_core::Identity::new("acme", "web", "agent-1"));
}

#[tokio::test]
async fn failover_resends_to_the_survivor_and_a_returning_receiver_gets_traffic() {
    let (a, b) = (receiver(free_addr()).await, receiver(free_addr()).await);
    let (addr_a, addr_b) = (a.addr, b.addr);
    let mut sink = build_sink(&SPEC, &sink_config(&[addr_a, addr_b], "round_robin", "")).unwrap();
    let mut rxs = Vec::new();
    for i in 0..10 {
        let (t, rx) = token();
        sink.write_acked(&batch(i * 10, 10), &mut Some(t)).await.unwrap();
        rxs.push(rx);
    }
    for rx in rxs.drain(..) {
        assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
    }
    // a dies: everything goes to b.
    let ea1 = a.stop().await;
    for i in 10..30 {
        let (t, rx) = token();
        sink.write_acked(&batch(i * 10, 10), &mut Some(t)).await.unwrap();
        rxs.push(rx);
    }
    for rx in rxs.drain(..) {
        assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
    }
    // a returns on the same address and gets batches again.
    let a2 = receiver(addr_a).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    for i in 30..50 {
        let (t, rx) = token();
        sink.write_acked(&batch(i * 10, 10), &mut Some(t)).await.unwrap();
        rxs.push(rx);
    }
    for rx in rxs.drain(..) {
        assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
    }
    sink.close().await.unwrap();
    let (ea2, eb) = (a2.stop().await, b.stop().await);
    assert!(!ea2.is_empty(), "the returning receiver gets traffic again");
    let mut all = ea1;
    all.extend(ea2);
    all.extend(eb);
    let mut s = seqs(&all);
    s.dedup();
    assert_eq!(s, (0..500).collect::<Vec<_>>(), "nothing lost");
}

/// A receiver that says `HELLO_OK`, answers every `PING` and never
/// acknowledges a batch; returns its address and how many batches it got.
async fn wedged_receiver() -> (SocketAddr, Arc<std::sync::atomic::AtomicU64>) {
    use sluice_protocol::frame::HelloOk;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let batches = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = Arc::clone(&batches);
    tokio::spawn(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else { return };
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let (rd, mut wr) = conn.into_split();
                let mut reader = FrameReader::new(rd, 1 << 24);
                while let Ok(Some(f)) = reader.read().await {
                    let reply = match f {
                        Frame::Hello(h) => Frame::HelloOk(HelloOk {
                            version: VERSION,
                            mode: h.mode,
                            max_batch_bytes: 1 << 24,
                            max_in_flight: 4,
                            initial_credits: 0,
                            heartbeat_ms: 200,
                            receiver: "wedged".into(),
                        }),
                        Frame::Ping { nonce } => Frame::Pong { nonce, fill: 0 },
                        Frame::Batch(_) => {
                            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            continue;
                        }
                        _ => continue,
                    };
                    if wr.write_all(&reply.to_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, batches)
}

#[tokio::test]
async fn a_receiver_that_pings_but_never_acks_is_failed_over_after_ack_timeout() {
    let (wedged, held) = wedged_receiver().await;
    let good = receiver(free_addr()).await;
    let cx = BuildContext::for_test("sink", "out");
    let cfg = sink_config(&[wedged, good.addr], "round_robin", "ack_timeout = \"1s\"");
    let mut sink = (SPEC.build)(toml::from_str(&cfg).unwrap(), &cx).unwrap();
    let mut rxs = Vec::new();
    for i in 0..20 {
        let (t, rx) = token();
        sink.write_acked(&batch(i * 10, 10), &mut Some(t)).await.unwrap();
        rxs.push(rx);
    }
    // Every batch is acknowledged, the ones the wedged receiver held
    // through the good one once the timeout failed it over.
    for rx in rxs.drain(..) {
        assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
    }
    assert!(held.load(std::sync::atomic::Ordering::SeqCst) > 0, "the wedged receiver was given batches");
    sink.close().await.unwrap();
    let (_, metrics) = cx.registry.components().into_iter().find(|(_, m)| m.id == format!("out@{wedged}")).unwrap();
    let got = good.stop().await;
    assert_eq!(seqs(&got), (0..200).collect::<Vec<_>>(), "every event once, through the good receiver");
    assert!(metrics.counter("ack_timeouts").get() >= 1, "ack_timeouts counted");
}

#[tokio::test]
async fn all_receivers_down_blocks_with_an_error_that_keeps_the_batch() {
    let addr = free_addr();
    let mut sink = build_sink(&SPEC, &sink_config(&[addr], "least_loaded", "block_timeout = \"300ms\"")).unwrap();
    // Two batches are taken: one held by the dispatcher, one in its channel.
    let (t1, rx1) = token();
    sink.write_acked(&batch(0, 5), &mut Some(t1)).await.unwrap();
    let (t2, rx2) = token();
    sink.write_acked(&batch(5, 5), &mut Some(t2)).await.unwrap();
    // The third finds no room: an error, the token stays with the caller.
    let (t3, rx3) = token();
    let mut ack = Some(t3);
    let e = sink.write_acked(&batch(10, 5), &mut ack).await.unwrap_err();
    assert!(e.to_string().starts_with("no receiver took the batch within 300ms"), "{e}");
    assert!(ack.is_some());
    assert!(rx1.try_recv().is_err(), "nothing resolved while every receiver is down");
    // The receiver comes up: the held batches are delivered, the retry goes through.
    let r = receiver(addr).await;
    sink.write_acked(&batch(10, 5), &mut ack).await.unwrap();
    for rx in [rx1, rx2, rx3] {
        assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
    }
    sink.close().await.unwrap();
    assert_eq!(seqs(&r.stop().await), (0..15).collect::<Vec<_>>());
}

#[tokio::test]
async fn credit_mode_delivers_everything() {
    let (a, b) = (receiver(free_addr()).await, receiver(free_addr()).await);
    let mut sink = build_sink(&SPEC, &sink_config(&[a.addr, b.addr], "credit", "window = 2")).unwrap();
    let mut rxs = Vec::new();
    for i in 0..40 {
        let (t, rx) = token();
        sink.write_acked(&batch(i * 5, 5), &mut Some(t)).await.unwrap();
        rxs.push(rx);
    }
    for rx in &rxs {
        assert_eq!(wait_delivered(rx).await, Delivery::Delivered);
    }
    sink.close().await.unwrap();
    let mut all = a.stop().await;
    all.extend(b.stop().await);
    assert_eq!(seqs(&all), (0..200).collect::<Vec<_>>());
}

#[tokio::test]
async fn large_batches_are_split_and_oversized_events_counted() {
    let r = receiver(free_addr()).await;
    let cx = BuildContext::for_test("sink", "s");
    let body = sink_config(&[r.addr], "round_robin", "max_batch_bytes = \"2KiB\"\ncompression = \"none\"");
    let mut sink = (SPEC.build)(toml::from_str(&body).unwrap(), &cx).unwrap();
    let mut events = batch(0, 100);
    events.push(Event::from_message("x".repeat(4096)));
    let (t, rx) = token();
    sink.write_acked(&events, &mut Some(t)).await.unwrap();
    assert_eq!(wait_delivered(&rx).await, Delivery::Delivered);
    sink.close().await.unwrap();
    assert_eq!(r.stop().await.len(), 100);
    assert_eq!(cx.metrics.counter("oversized_events").get(), 1);
    assert!(cx.metrics.counter("batches").get() >= 2);
}

#[test]
fn config_errors_name_the_key() {
    let e = build_sink(&SPEC, "receivers = []\ntoken = \"0123456789abcdef\"").err().unwrap();
    assert_eq!(e.to_string(), "test.sluice.receivers: at least one receiver is needed");
    let e = build_sink(&SPEC, "receivers = [\"nope\"]\ntoken = \"0123456789abcdef\"").err().unwrap();
    assert!(e.to_string().starts_with("test.sluice.receivers[0]: expected \"host:port\""), "{e}");
    let e = build_sink(&SPEC, "receivers = [\"h:1\"]\nalgorithm = \"fastest\"\ntoken = \"0123456789abcdef\"")
        .err()
        .unwrap();
    assert!(e.to_string().starts_with("test.sluice.algorithm: "), "{e}");
    let e = build_sink(&SPEC, "receivers = [\"h:1\"]").err().unwrap();
    assert_eq!(e.to_string(), "test.sluice.token: set exactly one of `token`, `token_env` and `token_file`");
    let e =
        build_sink(&SPEC, "receivers = [\"h:1\"]\ntoken = \"0123456789abcdef\"\ncompression = \"gzip\"").err().unwrap();
    assert_eq!(e.to_string(), "test.sluice.compression: expected zstd, lz4 or none, found \"gzip\"");
    let e = build_sink(&SPEC, "receivers = [{ address = \"h:1\", wieght = 2 }]\ntoken = \"0123456789abcdef\"")
        .err()
        .unwrap();
    assert!(e.to_string().starts_with("test.sluice.receivers"), "{e}");
}
