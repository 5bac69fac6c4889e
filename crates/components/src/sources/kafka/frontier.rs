//! Per-partition acknowledgement frontiers: the offset committed for a
//! partition only moves over batches that were all delivered.

use super::*;

// ---------------------------------------------------------------------------
// Per-partition acknowledgement frontier.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RangeState {
    Pending,
    Acked,
    Failed,
}

/// One batch's records of one partition: offsets up to `end` (exclusive).
#[derive(Debug)]
pub(super) struct Range {
    pub(super) id: u64,
    pub(super) end: i64,
    pub(super) state: RangeState,
}

#[derive(Debug, Default)]
pub(super) struct PartState {
    /// Bumped on every (re)assignment; acks of an older generation are ignored.
    pub(super) generation: u64,
    /// Batches handed on, in read order.
    pub(super) pending: VecDeque<Range>,
    /// The next offset to commit: everything before it is acknowledged.
    pub(super) committable: Option<i64>,
    /// What was last committed (or is being committed).
    pub(super) committed: Option<i64>,
}

impl PartState {
    pub(super) fn resolve(&mut self, id: u64, state: RangeState) {
        if let Some(r) = self.pending.iter_mut().find(|r| r.id == id) {
            r.state = state;
        }
        while let Some(front) = self.pending.front() {
            if front.state != RangeState::Acked {
                break;
            }
            self.committable = Some(front.end);
            self.pending.pop_front();
        }
    }

    pub(super) fn in_flight(&self) -> usize {
        self.pending.iter().filter(|r| r.state == RangeState::Pending).count()
    }
}

pub(super) type PartKey = (Arc<str>, i32);

/// State shared by the consumer thread, the ack callbacks and the rebalance callback.
#[derive(Default)]
pub(super) struct Frontiers {
    pub(super) parts: Mutex<HashMap<PartKey, PartState>>,
    pub(super) changed: Condvar,
    pub(super) next_id: AtomicU64,
    pub(super) generation: AtomicU64,
}

impl Frontiers {
    /// Registers a batch's ranges; returns what its token must resolve.
    pub(super) fn register(&self, ranges: &HashMap<PartKey, i64>) -> Vec<(PartKey, u64, u64)> {
        let mut parts = self.parts.lock();
        let mut out = Vec::with_capacity(ranges.len());
        for (k, end) in ranges {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let p = parts.entry(k.clone()).or_insert_with(|| PartState {
                generation: self.generation.fetch_add(1, Ordering::Relaxed) + 1,
                ..PartState::default()
            });
            p.pending.push_back(Range { id, end: *end, state: RangeState::Pending });
            out.push((k.clone(), p.generation, id));
        }
        out
    }

    pub(super) fn resolve(&self, ranges: &[(PartKey, u64, u64)], state: RangeState) {
        let mut parts = self.parts.lock();
        for (k, generation, id) in ranges {
            if let Some(p) = parts.get_mut(k) {
                if p.generation == *generation {
                    p.resolve(*id, state);
                }
            }
        }
        drop(parts);
        self.changed.notify_all();
    }

    /// Offsets to commit now: where the acknowledged frontier moved past
    /// the last commit, or (`force`: at revocation and shutdown, when the
    /// outcome of an earlier asynchronous commit may not be known yet) every
    /// acknowledged frontier.
    pub(super) fn due(&self, only: Option<&[PartKey]>, force: bool) -> Vec<(PartKey, i64)> {
        let mut parts = self.parts.lock();
        let mut out = Vec::new();
        for (k, p) in parts.iter_mut() {
            if only.is_some_and(|o| !o.contains(k)) {
                continue;
            }
            if let Some(c) = p.committable {
                if force || p.committed != Some(c) {
                    p.committed = Some(c);
                    out.push((k.clone(), c));
                }
            }
        }
        out
    }

    /// A commit failed: commit these partitions again on the next tick.
    pub(super) fn uncommit(&self, keys: &[(String, i32)]) {
        let mut parts = self.parts.lock();
        for (t, p) in keys {
            if let Some(s) = parts.iter_mut().find(|(k, _)| &*k.0 == t.as_str() && k.1 == *p).map(|(_, s)| s) {
                s.committed = None;
            }
        }
    }
}

pub(super) fn tpl_of(offsets: &[(PartKey, i64)]) -> TopicPartitionList {
    let mut tpl = TopicPartitionList::with_capacity(offsets.len());
    for ((t, p), o) in offsets {
        let _ = tpl.add_partition_offset(t, *p, Offset::Offset(*o));
    }
    tpl
}
