//! Consumer groups of 2 and 4 processors: every event exactly once, a
//! processor killed with -9, and all processors down then back.

use crate::harness::*;
use std::time::{Duration, Instant};

#[test]
fn kafka_two_processors_every_event_exactly_once() {
    run_group(2);
}

#[test]
fn kafka_four_processors_every_event_exactly_once() {
    run_group(4);
}

#[test]
fn kafka_kill9_processor_partitions_move_nothing_lost() {
    let _b = broker();
    let dir = Dir::new();
    let topic = unique("kill9");
    let group = unique("g");
    create_topic(MAIN, &topic, 8);
    let (cfg_a, out_a, _) = processor_config(&dir, "a", MAIN, &topic, &group, "");
    let (cfg_b, out_b, _) = processor_config(&dir, "b", MAIN, &topic, &group, "");
    let mut a = Proc::start("a", &cfg_a, &dir);
    let mut b = Proc::start("b", &cfg_b, &dir);
    a.wait_log("kafka partitions assigned", Duration::from_secs(60));
    b.wait_log("kafka partitions assigned", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(3));
    let n = 30_000;
    let mut agent = Proc::start("agent", &agent_config(&dir, MAIN, &topic, n, 3000, ""), &dir);
    // Kill A once it has written a good part of its share.
    let deadline = Instant::now() + Duration::from_secs(60);
    while read_seqs(&out_a).len() < 3000 {
        assert!(Instant::now() < deadline, "a never got events:\n{}", a.log_text());
        std::thread::sleep(Duration::from_millis(100));
    }
    a.kill9();
    let written_by_a = read_seqs(&out_a).len();
    // What the group had committed at the kill, then what had been written
    // (in this order: b keeps writing and committing, which only loosens
    // the bound): the duplicates are at most the difference, a's
    // uncommitted tail.
    let committed_at_kill = committed_total(MAIN, &group, &topic, 8);
    let written_at_kill = (read_seqs(&out_a).len() + read_seqs(&out_b).len()) as i64;
    let uncommitted = written_at_kill - committed_at_kill;
    let outs = vec![("a".to_string(), out_a.clone()), ("b".to_string(), out_b.clone())];
    let t = wait_total(&outs, n as usize, Duration::from_secs(120));
    agent.stop();
    b.stop();
    let t = Tally::of(&outs).print_and(t.missing(n));
    assert_eq!(t.1, Vec::<u64>::new(), "lost events after kill -9");
    let dups = t.0.duplicates();
    // Duplicates are exactly what A wrote but had not committed: re-read by
    // B from A's last commit. B never duplicates its own reads, so every
    // duplicated seq is in A's output, and A's commits worked (fewer
    // duplicates than A wrote).
    let a_seqs: std::collections::HashSet<u64> = read_seqs(&out_a).into_iter().collect();
    let b_seqs = read_seqs(&out_b);
    let mut b_seen = std::collections::HashSet::new();
    for s in &b_seqs {
        assert!(b_seen.insert(*s), "b wrote seq {s} twice");
    }
    let dup_seqs: Vec<u64> = t.0.counts.iter().filter(|(_, c)| **c > 1).map(|(s, _)| *s).collect();
    for s in &dup_seqs {
        assert!(a_seqs.contains(s), "duplicate {s} not from the killed processor");
    }
    assert!(dups < written_by_a, "duplicates {dups} >= events a wrote {written_by_a}: a never committed");
    assert!(
        dups as i64 <= uncommitted,
        "duplicates {dups} > events written but not committed at the kill {uncommitted}"
    );
    println!(
        "kill -9: a wrote {written_by_a} before the kill; written but not committed at the kill {uncommitted}; \
         duplicates (a's uncommitted tail) {dups}"
    );
    assert!(b.log_text().contains("kafka partitions assigned"));
}

#[test]
fn kafka_processors_all_down_then_back() {
    let _b = broker();
    let down: u64 = std::env::var("SLUICE_KAFKA_DOWN_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    let dir = Dir::new();
    let topic = unique("down");
    let group = unique("g");
    create_topic(MAIN, &topic, 8);
    let (cfg_a, out_a, _) = processor_config(&dir, "a", MAIN, &topic, &group, "");
    let (cfg_b, out_b, _) = processor_config(&dir, "b", MAIN, &topic, &group, "");
    let mut a = Proc::start("a", &cfg_a, &dir);
    let mut b = Proc::start("b", &cfg_b, &dir);
    a.wait_log("kafka partitions assigned", Duration::from_secs(60));
    b.wait_log("kafka partitions assigned", Duration::from_secs(60));
    let rate = 1000;
    let n = rate * (down + 6);
    let mut agent = Proc::start("agent", &agent_config(&dir, MAIN, &topic, n, rate, ""), &dir);
    std::thread::sleep(Duration::from_secs(2));
    a.stop();
    b.stop();
    let before = Tally::of(&[("a".into(), out_a.clone()), ("b".into(), out_b.clone())]).total();
    println!("processors stopped after {before} events; down for {down} s while the agent keeps sending");
    std::thread::sleep(Duration::from_secs(down));
    let mut a = Proc::start("a2", &cfg_a, &dir);
    let mut b = Proc::start("b2", &cfg_b, &dir);
    let outs = vec![("a".to_string(), out_a), ("b".to_string(), out_b)];
    let t = wait_total(&outs, n as usize, Duration::from_secs(120));
    agent.stop();
    a.stop();
    b.stop();
    let t2 = Tally::of(&outs);
    t2.print("down and back");
    assert!(before > 0 && before < n as usize, "the outage must fall inside the run ({before} of {n})");
    assert_eq!(t.missing(n), Vec::<u64>::new(), "lost events");
    assert_eq!(t2.duplicates(), 0, "a graceful stop commits everything acknowledged");
}
