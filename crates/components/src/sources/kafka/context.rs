//! The consumer context: librdkafka logs, consumer lag, rebalances
//! (revoked partitions wait for their in-flight batches).

use super::*;

// ---------------------------------------------------------------------------
// The consumer context: logs, lag, rebalances.

pub(super) struct Ctx {
    pub(super) log: LogContext,
    pub(super) frontiers: Arc<Frontiers>,
    pub(super) handoff: Arc<Handoff>,
    pub(super) start: StartFrom,
    pub(super) revoke_timeout: Duration,
    pub(super) counters: Counters,
    pub(super) metrics: Arc<ComponentMetrics>,
}

impl ClientContext for Ctx {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        self.log.log(level, fac, log_message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.log.error(error, reason);
    }

    fn stats(&self, stats: rdkafka::Statistics) {
        let mut series = Vec::new();
        for (topic, t) in &stats.topics {
            for (id, p) in &t.partitions {
                // -1 is librdkafka's internal "unassigned" partition.
                if *id < 0 || !p.desired {
                    continue;
                }
                let lag = if p.consumer_lag >= 0 {
                    p.consumer_lag
                } else if p.hi_offset >= 0 && p.committed_offset < 0 {
                    // Nothing committed yet: everything from the low watermark.
                    p.hi_offset - p.lo_offset.max(0)
                } else {
                    continue;
                };
                series.push(LabelledValue {
                    labels: vec![("topic", topic.clone()), ("partition", id.to_string())],
                    value: lag,
                });
            }
        }
        series.sort_by(|a, b| a.labels.cmp(&b.labels));
        self.metrics.replace_labelled("consumer_lag", series);
    }
}

impl Ctx {
    /// Commits what the revoked partitions acknowledged, after waiting (at
    /// most `revoke_timeout`) for their batches in flight, and forgets them.
    pub(super) fn revoke(&self, consumer: &BaseConsumer<Self>, tpl: &TopicPartitionList) {
        let keys: Vec<PartKey> = tpl.elements().iter().map(|e| (Arc::from(e.topic()), e.partition())).collect();
        // What was read and not yet handed on goes first (never processed
        // twice); at shutdown it is dropped unregistered instead.
        self.handoff.flush();
        let deadline = Instant::now() + self.revoke_timeout;
        let mut parts = self.frontiers.parts.lock();
        loop {
            let busy: usize = keys.iter().filter_map(|k| parts.get(k)).map(PartState::in_flight).sum();
            if busy == 0 {
                break;
            }
            if self.frontiers.changed.wait_until(&mut parts, deadline).timed_out() {
                let busy: usize = keys.iter().filter_map(|k| parts.get(k)).map(PartState::in_flight).sum();
                self.counters.unacked_at_revoke.add(busy as u64);
                tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, batches = busy,
                    "partitions revoked with batches still unacknowledged; the next owner reads them again (duplicates)");
                break;
            }
        }
        drop(parts);
        let due = self.frontiers.due(Some(&keys), true);
        if !due.is_empty() && !consumer.assignment_lost() {
            match consumer.commit(&tpl_of(&due), CommitMode::Sync) {
                Ok(()) => self.counters.commits.inc(),
                Err(e) => {
                    self.counters.commit_failures.inc();
                    tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, error = %e, "commit at revocation failed; the next owner may read acknowledged events again");
                }
            }
        }
        let mut parts = self.frontiers.parts.lock();
        for k in &keys {
            parts.remove(k);
        }
    }

    /// Sets start offsets for newly assigned partitions that have no
    /// committed offset when `start_from` is a time.
    pub(super) fn seek_to_time(&self, consumer: &BaseConsumer<Self>, tpl: &mut TopicPartitionList, at_ms: i64) {
        let committed = match consumer.committed_offsets(tpl.clone(), Duration::from_secs(10)) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, error = %e, "cannot read committed offsets; using auto.offset.reset");
                return;
            }
        };
        let mut query = TopicPartitionList::new();
        for e in committed.elements() {
            if e.offset() == Offset::Invalid {
                let _ = query.add_partition_offset(e.topic(), e.partition(), Offset::Offset(at_ms));
            }
        }
        if query.count() == 0 {
            return;
        }
        match consumer.offsets_for_times(query, Duration::from_secs(10)) {
            Ok(found) => {
                for e in found.elements() {
                    let _ = tpl.set_partition_offset(e.topic(), e.partition(), e.offset());
                }
            }
            Err(e) => {
                tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, error = %e, "offsets_for_times failed; using auto.offset.reset")
            }
        }
    }
}

impl ConsumerContext for Ctx {
    fn rebalance(&self, consumer: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        self.counters.rebalances.inc();
        let cooperative = matches!(consumer.rebalance_protocol(), RebalanceProtocol::Cooperative);
        let parts: Vec<String> = tpl.elements().iter().map(|e| format!("{}/{}", e.topic(), e.partition())).collect();
        let result = match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                tracing::info!(pipeline = %self.log.pipeline, source = %self.log.id, partitions = ?parts, "kafka partitions assigned");
                if let StartFrom::Time(t) = self.start {
                    self.seek_to_time(consumer, tpl, t);
                }
                if cooperative {
                    consumer.incremental_assign(tpl)
                } else {
                    consumer.assign(tpl)
                }
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                tracing::info!(pipeline = %self.log.pipeline, source = %self.log.id, partitions = ?parts, "kafka partitions revoked");
                self.revoke(consumer, tpl);
                if cooperative {
                    consumer.incremental_unassign(tpl)
                } else {
                    consumer.unassign()
                }
            }
            other => {
                tracing::error!(pipeline = %self.log.pipeline, source = %self.log.id, error = ?other, "kafka rebalance error");
                if cooperative {
                    consumer.incremental_unassign(tpl)
                } else {
                    consumer.unassign()
                }
            }
        };
        if let Err(e) = result {
            tracing::error!(pipeline = %self.log.pipeline, source = %self.log.id, error = %e, "applying a kafka rebalance failed");
        }
    }

    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        // A commit can fail as a whole (`result`) or per partition (the
        // group's generation changed during a rebalance: the top-level result
        // is then often `Ok`); either way those partitions are committed
        // again on the next tick.
        let failed: Vec<(String, i32)> = offsets
            .elements()
            .iter()
            .filter(|e| result.is_err() || e.error().is_err())
            .map(|e| (e.topic().to_string(), e.partition()))
            .collect();
        if failed.is_empty() {
            return;
        }
        self.counters.commit_failures.inc();
        let error = match &result {
            Err(e) => e.to_string(),
            Ok(()) => {
                offsets.elements().iter().find_map(|e| e.error().err()).map_or_else(String::new, |e| e.to_string())
            }
        };
        tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, error = %error, partitions = failed.len(), "offset commit failed; retrying on the next tick");
        self.frontiers.uncommit(&failed);
    }
}
