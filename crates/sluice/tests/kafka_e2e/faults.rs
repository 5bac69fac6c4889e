//! Faults outside the processors: the broker restarted mid-run, a missing
//! topic, oversized and invalid records.

use crate::common::free_port;
use crate::harness::*;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::ClientConfig;
use std::io::Write;
use std::time::{Duration, Instant};

#[test]
fn kafka_broker_unreachable_then_restarted_mid_run() {
    let _b = broker();
    kafka_sh(&["stop", "restart"], &RESTART_ENV);
    let dir = Dir::new();
    let topic = unique("restart");
    let group = unique("g");
    // 15,000 events at 600/s take 25 s: the restart below (once 4,000 are
    // committed, ~15-20 s in) falls inside the run.
    let n = 15_000u64;
    // 1. The broker is down: the agent reports it, retries, and holds the events.
    let agent_cfg =
        agent_config(&dir, RESTART, &topic, n, 600, "message_timeout = \"2s\"\nmax_in_flight_events = 1000");
    let mut agent = Proc::start("agent", &agent_cfg, &dir);
    agent.wait_log("Connection refused", Duration::from_secs(30));
    agent.wait_log("kafka did not acknowledge records; retrying", Duration::from_secs(30));
    // Back-pressure: at most max_in_flight_events (+ one batch) reach the
    // sink; the rest waits in the agent's persisted queue; nothing is acked.
    std::thread::sleep(Duration::from_secs(2));
    let st = stats(api_of(&agent_cfg));
    let sink = &st["pipelines"]["ship"]["plugins"]["sinks"][0];
    assert_eq!(sink["counters"]["acked_events"].as_u64().unwrap_or(0), 0, "{sink}");
    assert!(sink["counters"]["retried_records"].as_u64().unwrap_or(0) > 0, "{sink}");
    assert!(sink["counters"]["client_errors"].as_u64().unwrap_or(0) > 0, "{sink}");
    assert!(sink["events"]["out"].as_u64().unwrap() <= 1000 + 256, "in-flight bound: {sink}");
    let queued = st["pipelines"]["ship"]["events"]["in"].as_u64().unwrap();
    assert!(queued > sink["events"]["out"].as_u64().unwrap() + 256, "events wait in the agent's queue: {st}");
    let err_line = agent.log_text().lines().find(|l| l.contains("kafka client error")).unwrap_or_default().to_string();
    assert!(err_line.contains("127.0.0.1:19094"), "the error names the broker: {err_line}");
    // 2. The broker comes up; the topic is created; everything flows.
    kafka_sh(&["start", "restart"], &RESTART_ENV);
    create_topic(RESTART, &topic, 8);
    let (cfg_a, out_a, api_a) = processor_config(&dir, "a", RESTART, &topic, &group, "");
    let (cfg_b, out_b, api_b) = processor_config(&dir, "b", RESTART, &topic, &group, "");
    let mut a = Proc::start("a", &cfg_a, &dir);
    let mut b = Proc::start("b", &cfg_b, &dir);
    let outs = vec![("a".to_string(), out_a), ("b".to_string(), out_b)];
    // The group has read and committed a good part (so the bound below
    // means something: a group that lost its commits reads everything again).
    let deadline = Instant::now() + Duration::from_secs(90);
    while committed_total(RESTART, &group, &topic, 8) < 4000 {
        assert!(Instant::now() < deadline, "nothing committed after the broker started:\n{}", agent.log_text());
        std::thread::sleep(Duration::from_millis(200));
    }
    // 3. Restart the broker mid-run. The group can read again, after the
    // restart, only what it had read but not committed when the broker went
    // down: at most `read_before − committed_before` records, where
    // `committed_before` is the group's committed offsets just before the
    // stop and `read_before` what the processors' sources had read once the
    // broker was gone (nothing new can arrive then; librdkafka's prefetched
    // records are waited for). Re-reads before the stop only loosen it.
    let committed_before = committed_total(RESTART, &group, &topic, 8);
    kafka_sh(&["stop", "restart"], &RESTART_ENV);
    let read_before = settled(|| [api_a, api_b].iter().map(|&api| source_events_out(api)).sum::<u64>());
    std::thread::sleep(Duration::from_secs(2));
    kafka_sh(&["start", "restart"], &RESTART_ENV);
    let t = wait_total(&outs, n as usize, Duration::from_secs(150));
    // What the agent produced again after a delivery failure: the only
    // source of extra records in the topic.
    let st = stats(api_of(&agent_cfg));
    let sink = &st["pipelines"]["ship"]["plugins"]["sinks"][0];
    let retried = sink["counters"]["retried_records"].as_u64().unwrap_or(0) as i64;
    agent.stop();
    // The group formed again after the restart and commits every record.
    let in_topic = records_in_topic(RESTART, &topic, 8);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let c = committed_total(RESTART, &group, &topic, 8);
        if c == in_topic {
            break;
        }
        assert!(Instant::now() < deadline, "the group committed {c} of {in_topic} records after the restart");
        std::thread::sleep(Duration::from_millis(500));
    }
    a.stop();
    b.stop();
    kafka_sh(&["stop", "restart"], &RESTART_ENV);
    let t2 = Tally::of(&outs);
    t2.print("broker restart");
    // Duplicates are allowed here (at-least-once), within bounds: records
    // whose delivery timed out while the broker was down are produced again
    // (some had been written), and offsets whose commit failed are read again.
    let rereads = t2.total() as i64 - in_topic;
    let reread_bound = read_before as i64 - committed_before;
    println!(
        "broker restart: {in_topic} records in the topic for {n} events (producer re-sends {}), \
         consumer re-reads {rereads} (at most {reread_bound}: {read_before} read, {committed_before} committed \
         when the broker stopped); the agent re-produced {retried} records",
        in_topic - n as i64,
    );
    assert!(in_topic >= n as i64, "the topic holds every event");
    assert!(
        in_topic - n as i64 <= retried,
        "{} extra records in the topic but only {retried} were produced again",
        in_topic - n as i64
    );
    assert_eq!(t.missing(n), Vec::<u64>::new(), "lost events across broker outages");
    assert!(rereads >= 0, "{} records in the files, {in_topic} in the topic: some never read", t2.total());
    assert!(
        rereads <= reread_bound,
        "the group read {rereads} records again, more than it had uncommitted ({reread_bound})"
    );
    assert!(read_before < n, "the restart must fall inside the run: {read_before} of {n} read");
}

#[test]
fn kafka_missing_topic_is_a_clear_error_and_nothing_is_dropped() {
    let _b = broker();
    let dir = Dir::new();
    let topic = unique("missing");
    let group = unique("g");
    let n = 500;
    let agent_cfg = agent_config(&dir, MAIN, &topic, n, 0, "message_timeout = \"2s\"");
    let mut agent = Proc::start("agent", &agent_cfg, &dir);
    agent.wait_log("kafka topic does not exist", Duration::from_secs(60));
    let line =
        agent.log_text().lines().find(|l| l.contains("kafka topic does not exist")).unwrap_or_default().to_string();
    assert!(line.contains(&topic), "the error names the topic: {line}");
    // Created later: the waiting events are delivered, none lost.
    create_topic(MAIN, &topic, 2);
    let (cfg, out, _) = processor_config(&dir, "p", MAIN, &topic, &group, "");
    let mut p = Proc::start("p", &cfg, &dir);
    let outs = vec![("p".to_string(), out)];
    let t = wait_total(&outs, n as usize, Duration::from_secs(90));
    let sink = stats(api_of(&agent_cfg))["pipelines"]["ship"]["plugins"]["sinks"][0].clone();
    let retried = sink["counters"]["retried_records"].as_u64().unwrap_or(0) as i64;
    agent.stop();
    p.stop();
    let in_topic = records_in_topic(MAIN, &topic, 2);
    assert_eq!(t.missing(n), Vec::<u64>::new());
    let t = Tally::of(&outs);
    t.print("missing topic");
    // Nothing was written while the topic was missing; a record produced
    // twice can only be one the agent retried. One consumer that never
    // restarts reads each record once, and commits them all when stopped.
    assert!(in_topic - n as i64 <= retried, "{in_topic} records for {n} events, {retried} retried: {sink}");
    assert_eq!(t.total() as i64, in_topic, "the processor read a record twice (or missed one)");
    assert_eq!(committed_total(MAIN, &group, &topic, 2), in_topic);
}

#[test]
fn kafka_oversized_and_invalid_records_are_counted_tagged_and_kept() {
    let _b = broker();
    let dir = Dir::new();
    let topic = unique("bad");
    let group = unique("g");
    create_topic(MAIN, &topic, 2);
    // An agent with a tcp source and a small record limit.
    let port = free_port();
    let agent_api = free_port();
    let agent_cfg = dir.write(
        "agent.toml",
        &format!(
            r#"
[node]
data_dir = "{data}"
[api]
address = "127.0.0.1:{agent_api}"
[pipelines.ship]
workers = 1
[pipelines.ship.sources.in]
type = "tcp"
address = "127.0.0.1:{port}"
format = "ndjson"
[pipelines.ship.sinks.kafka]
type = "kafka"
brokers = "{MAIN}"
topic = "{topic}"
max_message_bytes = "2KiB"
"#,
            data = dir.path("agent-data").display()
        ),
    );
    let mut agent = Proc::start("agent", &agent_cfg, &dir);
    agent.wait_log("node started", Duration::from_secs(30));
    let mut lines = String::new();
    for i in 0..10u64 {
        let msg = if i % 5 == 0 { "y".repeat(5000) } else { format!("small {i}") };
        lines.push_str(&format!("{{\"message\":\"{msg}\",\"seq\":{i}}}\n"));
    }
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(lines.as_bytes()).unwrap();
    drop(s);
    // Records that are not sluice events, written by someone else.
    let prod: BaseProducer = ClientConfig::new().set("bootstrap.servers", MAIN).create().unwrap();
    for v in ["not json", "[1,2,3]", ""] {
        prod.send(BaseRecord::<(), str>::to(&topic).payload(v).partition(0)).map_err(|(e, _)| e).unwrap();
    }
    prod.flush(Duration::from_secs(10)).unwrap();
    let (cfg, out, api) = processor_config(&dir, "p", MAIN, &topic, &group, "");
    let mut p = Proc::start("p", &cfg, &dir);
    let read_lines = || -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while read_lines().len() < 13 {
        assert!(Instant::now() < deadline, "fewer than 13 records after 60 s: {:?}", read_lines());
        std::thread::sleep(Duration::from_millis(200));
    }
    let agent_stats = stats(agent_api);
    // Lag comes with librdkafka's statistics (lag_interval = 1s); once the
    // processor committed every record it is 0 on both partitions.
    let deadline = Instant::now() + Duration::from_secs(30);
    let p_stats = loop {
        let s = stats(api);
        let lag = s["pipelines"]["main"]["plugins"]["sources"][0]["gauges"]["consumer_lag"].clone();
        if lag.as_array().is_some_and(|l| l.len() == 2 && l.iter().all(|p| p["value"] == 0)) {
            break s;
        }
        assert!(Instant::now() < deadline, "the consumer lag never read 0 on both partitions: {lag}");
        std::thread::sleep(Duration::from_millis(250));
    };
    agent.stop();
    p.stop();
    // Read after the stop: a record delivered twice would show here.
    let lines = read_lines();
    assert_eq!(lines.len(), 13, "10 events + 3 foreign records: {lines:?}");
    let mut seqs: Vec<u64> = lines.iter().filter_map(|v| v["seq"].as_u64()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, vec![1, 2, 3, 4, 6, 7, 8, 9], "each event that fits, once");
    let tagged = |tag: &str| -> Vec<&serde_json::Value> {
        lines.iter().filter(|v| v["tags"].as_array().is_some_and(|a| a.iter().any(|t| t == tag))).collect()
    };
    // Events 0 and 5 (5,000-byte messages) became stubs: the first 1,024
    // bytes of the message, the tag, and the size of the record they would
    // have been: the stub's envelope (@timestamp, identity, @source, kept
    // as they were) around `"message":"y…y","seq":N`.
    let oversized = tagged("_kafka_oversized");
    assert_eq!(oversized.len(), 2, "{oversized:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut stub_lines: Vec<&str> = text.lines().filter(|l| l.contains("_kafka_oversized")).collect();
    stub_lines.sort_unstable();
    let mut sizes: Vec<u64> = oversized.iter().map(|v| v["kafka_original_bytes"].as_u64().unwrap()).collect();
    sizes.sort_unstable();
    let mut expected: Vec<u64> = stub_lines
        .iter()
        .zip([0, 5])
        .map(|(l, seq)| {
            let envelope = &l[..l.find(",\"message\":").unwrap()];
            (envelope.len() + format!(",\"message\":\"{}\",\"seq\":{seq}}}", "y".repeat(5000)).len()) as u64
        })
        .collect();
    expected.sort_unstable();
    assert_eq!(sizes, expected, "{stub_lines:?}");
    for stub in &oversized {
        assert_eq!(stub["message"].as_str().unwrap(), "y".repeat(1024));
    }
    let mut foreign: Vec<&str> =
        tagged("_jsonparsefailure").iter().map(|v| v["message"].as_str().unwrap_or("<none>")).collect();
    foreign.sort_unstable();
    assert_eq!(foreign, vec!["", "[1,2,3]", "not json"]);
    let sink = &agent_stats["pipelines"]["ship"]["plugins"]["sinks"][0];
    assert_eq!(sink["counters"]["oversized_events"], 2, "{sink}");
    assert_eq!(sink["counters"]["acked_events"], 10, "{sink}");
    let src = &p_stats["pipelines"]["main"]["plugins"]["sources"][0];
    assert_eq!(src["counters"]["invalid_records"], 3, "{src}");
    assert_eq!(src["events"]["failed"], 3, "{src}");
    let lag = src["gauges"]["consumer_lag"].as_array().cloned().unwrap_or_default();
    assert_eq!(lag.len(), 2, "lag per partition in /_node/stats: {src}");
    assert!(lag.iter().all(|l| l["labels"]["topic"] == topic.as_str()), "{lag:?}");
}
