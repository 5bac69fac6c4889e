//! The `beats` source over a real socket with hand-made frames: the ACK
//! waits for the queue's acknowledgement, a dropped batch is never
//! acknowledged, malformed streams close the connection and are counted.

use super::*;
use crate::testkit::{connect, listening_pinned, wait_for as wait};
use sluice_core::Value;
use std::io::Write;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn json(seq: u32, p: &str) -> Vec<u8> {
    let mut v = vec![b'2', b'J'];
    v.extend_from_slice(&seq.to_be_bytes());
    v.extend_from_slice(&(p.len() as u32).to_be_bytes());
    v.extend_from_slice(p.as_bytes());
    v
}

fn window(n: u32) -> Vec<u8> {
    let mut v = vec![b'2', b'W'];
    v.extend_from_slice(&n.to_be_bytes());
    v
}

fn compressed(inner: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(inner).unwrap();
    let z = z.finish().unwrap();
    let mut v = vec![b'2', b'C'];
    v.extend_from_slice(&(z.len() as u32).to_be_bytes());
    v.extend_from_slice(&z);
    v
}

#[tokio::test]
async fn ack_is_written_only_after_the_queue_acknowledged_and_fields_are_kept() {
    let (addr, cap, shutdown, m, task) = listening_pinned(&SPEC, "");
    let mut s = connect(addr).await;
    let doc = r#"{"@timestamp":"2026-11-27T01:02:03.5Z","@metadata":{"beat":"winlogbeat"},"message":"logon","host":{"name":"win-1"},"agent":{"type":"winlogbeat"},"winlog":{"event_id":4624},"@host":"evil"}"#;
    let mut bytes = window(3);
    bytes.extend(json(1, doc));
    bytes.extend(compressed(&[json(2, r#"{"message":"two"}"#), json(3, "not json")].concat()));
    s.write_all(&bytes).await.unwrap();
    wait("3 events queued", || cap.events.lock().len() == 3).await;
    // Queued but not yet durable: no ACK.
    let mut ack = [0u8; 6];
    assert!(
        tokio::time::timeout(Duration::from_millis(300), s.read_exact(&mut ack)).await.is_err(),
        "ACK before the queue acknowledged"
    );
    let tokens: Vec<_> = std::mem::take(&mut *cap.tokens.lock());
    assert_eq!(tokens.len(), 1);
    for t in tokens {
        t.delivered();
    }
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut ack)).await.unwrap().unwrap();
    assert_eq!(&ack, b"2A\0\0\0\x03");
    {
        let ev = cap.events.lock();
        assert_eq!(ev[0].message(), Some("logon"));
        assert_eq!(ev[0].timestamp, 1_795_741_323_500_000_000);
        assert_eq!((ev[0].identity.group.as_str(), ev[0].identity.host.as_str()), ("acme", "pinned"));
        let f = ev[0].fields();
        assert_eq!(f.get("@metadata").and_then(|v| v.get("beat")).and_then(Value::as_str), Some("winlogbeat"));
        assert_eq!(f.get("host").and_then(|v| v.get("name")).and_then(Value::as_str), Some("win-1"));
        assert_eq!(f.get("winlog").and_then(|v| v.get("event_id")).and_then(Value::as_i64), Some(4624));
        assert_eq!(f.get("agent").and_then(|v| v.get("type")).and_then(Value::as_str), Some("winlogbeat"));
        assert_eq!(ev[1].message(), Some("two"));
        assert!(ev[2].has_tag("_jsonparsefailure"));
        assert_eq!(ev[2].message(), Some("not json"));
    }
    // A second window whose batch the queue drops: never acknowledged, closed.
    let mut bytes = window(1);
    bytes.extend(json(1, r#"{"message":"dropped"}"#));
    s.write_all(&bytes).await.unwrap();
    wait("the second batch", || cap.tokens.lock().len() == 1).await;
    drop(std::mem::take(&mut *cap.tokens.lock()));
    let r = tokio::time::timeout(Duration::from_secs(5), s.read(&mut ack)).await.unwrap();
    assert!(matches!(r, Ok(0) | Err(_)), "expected close without ACK, got {r:?}");
    shutdown.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(m.events_failed.get(), 1);
    assert_eq!(m.counter("batches_not_acked").get(), 1);
    assert_eq!(m.counter("frames_invalid").get(), 0);
}

#[tokio::test]
async fn malformed_streams_are_closed_and_counted() {
    let (addr, _cap, shutdown, m, task) =
        listening_pinned(&SPEC, "max_frame_bytes = \"1KiB\"\nmax_decompressed_bytes = \"4KiB\"\nmax_window = 100");
    let mut bomb = window(1);
    bomb.extend(compressed(&json(1, &"x".repeat(10_000))));
    let nested = [window(1), compressed(&compressed(&json(1, "{}")))].concat();
    let cases: Vec<Vec<u8>> = vec![
        b"1W\0\0\0\x01".to_vec(),                           // lumberjack v1
        b"2Z\0\0\0\x01".to_vec(),                           // unknown frame
        window(101),                                        // window beyond the limit
        b"2J\0\0\0\x01\x7f\xff\xff\xff".to_vec(),           // 2 GiB frame announced
        bomb,                                               // inflates past the limit
        nested,                                             // compression inside compression
        [window(1), b"2C\0\0\0\x04abcd".to_vec()].concat(), // not zlib
    ];
    let n = cases.len() as u64;
    for c in cases {
        let mut s = connect(addr).await;
        s.write_all(&c).await.unwrap();
        let mut b = [0u8; 6];
        let r = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await.expect("closed, not hung");
        assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
    }
    wait("every case counted", || m.counter("frames_invalid").get() == n).await;
    shutdown.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let (addr, _cap, shutdown, m, task) = listening_pinned(&SPEC, "idle_timeout = \"200ms\"");
    let mut s = connect(addr).await;
    s.write_all(&window(2)).await.unwrap();
    let mut b = [0u8; 1];
    let r = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await.expect("idle closed");
    assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
    assert_eq!(m.counter("idle_closed").get(), 1);
    shutdown.cancel();
    task.await.unwrap().unwrap();
}
