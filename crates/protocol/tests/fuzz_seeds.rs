//! The fuzz seeds made by this crate's encoder (`fuzz/seeds/agent_protocol/`:
//! frames of every type and a whole session; `fuzz/seeds/json_event/batch-*`:
//! the core batch encoding of the same events), so the `agent_protocol` and
//! `json_event` fuzz targets start from real frames instead of nothing.
//!
//! The test checks that the committed seeds are exactly what the encoder
//! writes today and that each decodes back, frame by frame, to what was
//! encoded. After a deliberate format change, rewrite them with
//! `SLUICE_WRITE_SEEDS=1 cargo test -p sluice-protocol --test fuzz_seeds`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_core::codec::{encode_batch, event_from_json};
use sluice_core::{Event, Identity};
use sluice_protocol::compress::{decode_events, BatchEncoder, Compression};
use sluice_protocol::frame::{decode, Ack, AckStatus, Frame, Hello, HelloOk, Mode};
use sluice_protocol::{ErrorCode, FILL_UNKNOWN, VERSION};

/// The fuzz target's limit (`fuzz/fuzz_targets/agent_protocol.rs`).
const MAX_BATCH: u32 = 1 << 16;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The thesis's reference event and a syslog-like one, with fixed times.
fn events() -> Vec<Event> {
    let thesis = std::fs::read(repo().join("testdata/thesis/event.json")).expect("testdata/thesis/event.json");
    let (mut a, _) = event_from_json(&thesis).expect("the thesis event parses");
    a.identity = Arc::new(Identity::new("acme", "web", "ubuntu-1"));
    let (mut b, _) = event_from_json(
        br#"{"@timestamp":"2005-12-04T04:47:44Z","message":"[error] mod_jk child workerEnv in error state 6","level":"error","pid":6725}"#,
    )
    .expect("the second event parses");
    b.identity = Arc::new(Identity::new("acme", "db", "combo"));
    vec![a, b]
}

fn frame(f: &Frame) -> Vec<u8> {
    f.to_bytes()
}

fn batch(id: u64, compression: Compression, events: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    BatchEncoder::new(compression, 1).expect("encoder").encode(id, events, &mut out).expect("encode");
    out
}

/// Every seed: file name and bytes.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let evs = events();
    let hello = Frame::Hello(Hello {
        min_version: VERSION,
        max_version: VERSION,
        mode: Mode::Push,
        compressions: 0b111,
        token: "agent-token-0123456789abcdef".into(),
        group: "acme".into(),
        subgroup: "web".into(),
        host: "ubuntu-1".into(),
        agent: "sluice/0.1.0".into(),
    });
    let hello_ok = Frame::HelloOk(HelloOk {
        version: VERSION,
        mode: Mode::Credit,
        max_batch_bytes: MAX_BATCH,
        max_in_flight: 8,
        initial_credits: 4,
        heartbeat_ms: 1000,
        receiver: "processor-1".into(),
    });
    let acks = [
        Frame::Ack(Ack { id: 1, status: AckStatus::Queued, fill: 1234, credits: 1 }),
        Frame::Ack(Ack { id: 2, status: AckStatus::Retry, fill: FILL_UNKNOWN, credits: 0 }),
        Frame::Credit { credits: 3, fill: 42 },
    ];
    let mut session = frame(&hello);
    session.extend(batch(7, Compression::Zstd, &evs));
    session.extend(frame(&Frame::Ping { nonce: 99 }));
    let mut raw = Vec::new();
    encode_batch(&evs, &mut raw);
    vec![
        ("agent_protocol/hello.bin", frame(&hello)),
        ("agent_protocol/hello_ok.bin", frame(&hello_ok)),
        ("agent_protocol/batch_zstd.bin", batch(1, Compression::Zstd, &evs)),
        ("agent_protocol/batch_lz4.bin", batch(2, Compression::Lz4, &evs)),
        ("agent_protocol/batch_none.bin", batch(3, Compression::None, &evs)),
        ("agent_protocol/acks_and_credit.bin", acks.iter().flat_map(frame).collect()),
        (
            "agent_protocol/ping_pong.bin",
            [Frame::Ping { nonce: 7 }, Frame::Pong { nonce: 7, fill: 5000 }].iter().flat_map(frame).collect(),
        ),
        ("agent_protocol/error.bin", frame(&Frame::Error { code: ErrorCode::BadToken, reason: "bad token".into() })),
        ("agent_protocol/session.bin", session),
        ("json_event/batch-two-events.bin", raw),
    ]
}

#[test]
fn committed_fuzz_seeds_are_what_the_encoder_writes_and_decode_back() {
    let dir = repo().join("fuzz/seeds");
    let write = std::env::var_os("SLUICE_WRITE_SEEDS").is_some();
    let mut stale = Vec::new();
    for (name, bytes) in seeds() {
        let path = dir.join(name);
        if write {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        } else if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
            stale.push(name);
        }
        if name.starts_with("agent_protocol/") {
            // Every byte is a frame that decodes and encodes back; batch
            // payloads decode to the events they were made from.
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let (f, used) = decode(rest, MAX_BATCH).unwrap().unwrap_or_else(|| panic!("{name}: a cut frame"));
                assert_eq!(f.to_bytes(), rest[..used], "{name}: {f:?} re-encodes differently");
                if let Frame::Batch(b) = &f {
                    let got = decode_events(b, MAX_BATCH).unwrap();
                    let want: Vec<_> = events().iter().map(|e| e.fields().clone()).collect();
                    assert_eq!(got.iter().map(|e| e.fields().clone()).collect::<Vec<_>>(), want, "{name}");
                }
                rest = &rest[used..];
            }
        }
    }
    assert!(
        stale.is_empty(),
        "fuzz seeds missing or stale: {stale:?}; after a deliberate format change rewrite them with \
         SLUICE_WRITE_SEEDS=1 cargo test -p sluice-protocol --test fuzz_seeds"
    );
}
