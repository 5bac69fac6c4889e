//! Replay of a time range from Kafka, and the shipped Kafka examples.

use crate::common::bin;
use crate::harness::*;
use std::process::Command;
use std::time::Duration;

#[test]
fn kafka_replay_redelivers_exactly_the_time_range() {
    let _b = broker();
    let dir = Dir::new();
    let topic = unique("replay");
    let group = unique("g");
    create_topic(MAIN, &topic, 4);
    let base = sluice_core::event::now_ns() / 1_000_000 - 600_000;
    produce_with_times(&topic, 3000, base);
    // The group consumes everything and commits.
    let (cfg, out, _) = processor_config(&dir, "p", MAIN, &topic, &group, "");
    let mut p = Proc::start("p", &cfg, &dir);
    let outs = vec![("p".to_string(), out.clone())];
    let t = wait_total(&outs, 3000, Duration::from_secs(60));
    p.stop();
    assert_eq!(t.total(), 3000);
    let committed = committed_total(MAIN, &group, &topic, 4);
    assert_eq!(committed, 3000);
    // Replay [1000, 2000) by time into the same pipeline (its file sink).
    std::fs::remove_file(&out).unwrap();
    let from = rfc3339(base + 10 * 1000);
    let to = rfc3339(base + 10 * 2000);
    let r = Command::new(bin())
        .args(["kafka", "replay", "--config", cfg.to_str().unwrap(), "--from", &from, "--to", &to])
        .env("SLUICE_LOG", "info,librdkafka=warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "replay failed: {stdout}\n{}", String::from_utf8_lossy(&r.stderr));
    assert!(stdout.contains("\"replayed\":1000"), "{stdout}");
    let mut seqs = read_seqs(&out);
    seqs.sort_unstable();
    assert_eq!(seqs, (1000..2000).collect::<Vec<u64>>(), "exactly the range, once each");
    assert_eq!(committed_total(MAIN, &group, &topic, 4), committed, "the group's offsets are untouched");
    // A range with nothing in it replays nothing and succeeds.
    std::fs::remove_file(&out).unwrap();
    let r = Command::new(bin())
        .args([
            "kafka",
            "replay",
            "--config",
            cfg.to_str().unwrap(),
            "--from",
            &rfc3339(base - 60_000),
            "--to",
            &rfc3339(base - 1),
        ])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(String::from_utf8_lossy(&r.stdout).contains("\"replayed\":0"));
    assert!(read_seqs(&out).is_empty());
}

#[test]
fn kafka_examples_validate() {
    for name in ["agent-kafka.toml", "processor-kafka.toml"] {
        let path = repo().join("examples").join(name);
        let out = Command::new(bin()).args(["validate", path.to_str().unwrap()]).output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("{}: ok", path.display()));
    }
}
