//! End-to-end tests of pull-based distribution through a real Apache Kafka
//! broker (started by `scripts/kafka.sh`, KRaft on 127.0.0.1:19092; the
//! broker-restart test runs its own instance on 19094 so restarting it never
//! disturbs the other tests): agent (`sluice` with a generator or tcp source
//! and the kafka sink) → topic with 8 partitions → processors (`sluice` with
//! the kafka source in one consumer group) → file sinks. Every event carries
//! a sequence number; the tests count each one exactly.
//!
//! Each test uses its own topic and group (unique names). The tests run one
//! at a time (a lock): each starts several processes and the machine has two
//! cores. `SLUICE_KAFKA_DOWN_SECS` sets how long all processors stay down in
//! `kafka_processors_all_down_then_back` (default 30, the scenario;
//! a shorter value for quick local runs).
//!
//! One file per concern: `harness` (broker, topics, processes, tallies),
//! `groups`, `faults`, `replay`.
#![cfg(feature = "kafka")]

#[path = "../common/mod.rs"]
mod common;
mod faults;
mod groups;
mod harness;
mod replay;
