//! The `fluent_forward` source over a real socket: `{"ack": chunk}` waits
//! for the queue's acknowledgement, a dropped chunk is never acknowledged,
//! malformed streams are closed and counted.

use super::*;
use crate::testkit::{connect, listening_pinned, wait_for as wait};
use rmpv::Value as Mp;
use sluice_core::Value;
use std::io::Write;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn mp(v: &Mp) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, v).unwrap();
    out
}

fn rec(m: &str) -> Mp {
    Mp::Map(vec![(Mp::from("message"), Mp::from(m)), (Mp::from("host"), Mp::from("sender"))])
}

fn chunk(id: &str) -> Mp {
    Mp::Map(vec![(Mp::from("chunk"), Mp::from(id))])
}

#[tokio::test]
async fn chunk_ack_is_written_only_after_the_queue_acknowledged() {
    let (addr, cap, shutdown, m, task) = listening_pinned(&SPEC, "");
    let mut s = connect(addr).await;
    let pair = |m: &str| Mp::Array(vec![Mp::from(1_700_000_000), rec(m)]);
    let packed = [mp(&pair("p1")), mp(&pair("p2"))].concat();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&packed).unwrap();
    let mut bytes = mp(&Mp::Array(vec![Mp::from("app.a"), Mp::from(1_700_000_000), rec("m1")]));
    bytes.extend(mp(&Mp::Array(vec![Mp::from("app.b"), Mp::Array(vec![pair("f1")])])));
    bytes.extend(mp(&Mp::Array(vec![
        Mp::from("app.c"),
        Mp::Binary(gz.finish().unwrap()),
        Mp::Map(vec![(Mp::from("compressed"), Mp::from("gzip")), (Mp::from("chunk"), Mp::from("c-1"))]),
    ])));
    s.write_all(&bytes).await.unwrap();
    wait("4 events queued", || cap.events.lock().len() == 4).await;
    let mut b = [0u8; 64];
    assert!(
        tokio::time::timeout(Duration::from_millis(300), s.read(&mut b)).await.is_err(),
        "ACK before the queue acknowledged"
    );
    for t in std::mem::take(&mut *cap.tokens.lock()) {
        t.delivered();
    }
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await.unwrap().unwrap();
    assert_eq!(&b[..n], &sluice_parsers::fluent_forward::ack("c-1")[..]);
    {
        let ev = cap.events.lock();
        let msgs: Vec<_> = ev.iter().map(|e| e.message().unwrap_or("")).collect();
        assert_eq!(msgs, ["m1", "f1", "p1", "p2"]);
        assert_eq!(ev[0].timestamp, 1_700_000_000_000_000_000);
        assert_eq!(ev[2].fields().get("fluent_tag").and_then(Value::as_str), Some("app.c"));
        assert_eq!(ev[0].fields().get("host").and_then(Value::as_str), Some("sender"));
        assert_eq!((ev[0].identity.group.as_str(), ev[0].identity.host.as_str()), ("acme", "pinned"));
    }
    // A chunk whose batch the queue drops: no ACK, connection closed.
    s.write_all(&mp(&Mp::Array(vec![Mp::from("t"), Mp::from(1), rec("x"), chunk("c-2")]))).await.unwrap();
    wait("the dropped chunk", || cap.tokens.lock().len() == 1).await;
    drop(std::mem::take(&mut *cap.tokens.lock()));
    let r = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await.unwrap();
    assert!(matches!(r, Ok(0) | Err(_)), "expected close without ACK, got {r:?}");
    shutdown.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(m.counter("chunks_not_acked").get(), 1);
    assert_eq!(m.counter("messages_invalid").get(), 0);
}

#[tokio::test]
async fn malformed_streams_are_closed_and_counted() {
    let (addr, _cap, shutdown, m, task) =
        listening_pinned(&SPEC, "max_message_bytes = \"1KiB\"\nmax_decompressed_bytes = \"4KiB\"\nmax_depth = 4");
    let mut deep = rec("x");
    for _ in 0..10 {
        deep = Mp::Array(vec![deep]);
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0xc0; 1 << 20]).unwrap();
    let cases: Vec<Vec<u8>> = vec![
        mp(&Mp::from("not an array")),
        mp(&Mp::Array(vec![Mp::from("t"), Mp::from(1), Mp::from("record not a map")])),
        mp(&Mp::Array(vec![Mp::from("t"), Mp::from(1), deep])),
        mp(&Mp::Array(vec![Mp::from("t"), Mp::from(1), rec(&"x".repeat(2000))])),
        mp(&Mp::Array(vec![
            Mp::from("t"),
            Mp::Binary(gz.finish().unwrap()),
            Mp::Map(vec![(Mp::from("compressed"), Mp::from("gzip"))]),
        ])),
        b"\xc1".to_vec(), // never used in msgpack
    ];
    let n = cases.len() as u64;
    for c in cases {
        let mut s = connect(addr).await;
        s.write_all(&c).await.unwrap();
        let mut b = [0u8; 8];
        let r = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await.expect("closed, not hung");
        assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
    }
    wait("every case counted", || m.counter("messages_invalid").get() == n).await;
    shutdown.cancel();
    task.await.unwrap().unwrap();
}

/// Reads one msgpack value from `s`.
async fn read_value(s: &mut tokio::net::TcpStream) -> Mp {
    let mut buf = Vec::new();
    loop {
        if let Ok(v) = rmpv::decode::read_value(&mut std::io::Cursor::new(&buf)) {
            return v;
        }
        let mut b = [0u8; 256];
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await.unwrap().unwrap();
        assert!(n > 0, "closed while waiting for a value");
        buf.extend_from_slice(&b[..n]);
    }
}

#[tokio::test]
async fn shared_key_handshake_admits_the_right_key_only() {
    let (addr, cap, shutdown, m, task) =
        listening_pinned(&SPEC, "shared_key = \"s3cret\"\nself_hostname = \"sluice-1\"");
    for (key, admitted) in [("s3cret", true), ("wrong", false)] {
        let mut s = connect(addr).await;
        let helo = read_value(&mut s).await;
        assert_eq!(helo[0].as_str(), Some("HELO"));
        let nonce = helo[1]
            .as_map()
            .unwrap()
            .iter()
            .find(|(k, _)| k.as_str() == Some("nonce"))
            .unwrap()
            .1
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(nonce.len(), 32);
        let digest = handshake::digest("salt", "client-1", &nonce, key);
        let ping = Mp::Array(vec![
            Mp::from("PING"),
            Mp::from("client-1"),
            Mp::from("salt"),
            Mp::from(digest),
            Mp::from(""),
            Mp::from(""),
        ]);
        s.write_all(&mp(&ping)).await.unwrap();
        let pong = read_value(&mut s).await;
        assert_eq!((pong[0].as_str(), pong[1].as_bool()), (Some("PONG"), Some(admitted)), "{key}");
        if admitted {
            assert_eq!(pong[4].as_str(), Some(handshake::digest("salt", "sluice-1", &nonce, key).as_str()));
            s.write_all(&mp(&Mp::Array(vec![Mp::from("t"), Mp::from(1), rec("after handshake"), chunk("k1")])))
                .await
                .unwrap();
            wait("the record", || cap.tokens.lock().len() == 1).await;
            for t in std::mem::take(&mut *cap.tokens.lock()) {
                t.delivered();
            }
            assert_eq!(read_value(&mut s).await, Mp::Map(vec![(Mp::from("ack"), Mp::from("k1"))]));
        } else {
            let mut b = [0u8; 8];
            let r = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await.unwrap();
            assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
        }
    }
    shutdown.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(cap.events.lock().len(), 1);
    assert_eq!(m.counter("auth_failures").get(), 1);
}
