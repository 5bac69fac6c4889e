//! The queue positions a partition has committed, so that a record the
//! upstream persisted queue delivers again after a crash is not stored twice
//! (docs/adr/0060-exactly-once-into-the-store.md, docs/specs/store-format.md
//! "Committed queue positions").
//!
//! Per partition, per queue epoch and shard: byte ranges `[start, end)` of
//! records whose events in this partition are committed, and the shard's
//! `floor` — its checkpointed frontier as the records' deliveries reported
//! it: the queue never delivers anything before it again, so ranges behind
//! it are dropped. What is left is about the records the queue still holds
//! (its unacknowledged window): a few ranges, as consecutive records merge.
//! The set is saved in the partition's commit payload, in the same commit as
//! the documents, so documents and positions are durable together.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sluice_core::QueuePosition;

/// Ranges kept per (epoch, shard) at most; beyond, the oldest are dropped
/// (those records, if replayed, are stored again: at-least-once) and counted.
pub const MAX_RANGES: usize = 4096;

/// One (epoch, shard) as saved in the commit payload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedShard {
    /// Queue epoch, 16 hex digits.
    pub epoch: String,
    /// Shard.
    pub shard: u32,
    /// Checkpointed frontier `[segment, offset]`.
    pub floor: [u64; 2],
    /// Committed records `[segment, start, end]`, in order.
    pub done: Vec<[u64; 3]>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Ranges {
    floor: (u64, u64),
    /// (segment, start) -> end.
    ranges: BTreeMap<(u64, u64), u64>,
}

impl Ranges {
    fn contains(&self, segment: u64, offset: u64) -> bool {
        self.ranges.range(..=(segment, offset)).next_back().is_some_and(|(&(s, _), &end)| s == segment && offset < end)
    }

    /// Adds `[start, end)` in `segment`, merged with touching neighbours.
    fn insert(&mut self, segment: u64, start: u64, end: u64) {
        let mut from = start;
        if let Some((&(s, a), &e)) = self.ranges.range(..(segment, start)).next_back() {
            if s == segment && e >= start {
                from = a;
            }
        }
        let mut to = end;
        if let Some(e) = self.ranges.remove(&(segment, end)) {
            to = to.max(e);
        }
        let e = self.ranges.get(&(segment, from)).copied().unwrap_or(0);
        self.ranges.insert((segment, from), to.max(e));
    }

    /// Raises the floor and drops what lies behind it; keeps at most
    /// [`MAX_RANGES`]. Returns how many ranges the cap dropped.
    fn prune(&mut self, floor: (u64, u64)) -> usize {
        self.floor = self.floor.max(floor);
        let f = self.floor;
        self.ranges.retain(|&(s, _), &mut e| (s, e) > f);
        let mut dropped = 0;
        while self.ranges.len() > MAX_RANGES {
            self.ranges.pop_first();
            dropped += 1;
        }
        dropped
    }
}

/// The committed (or pending) positions of one partition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Positions {
    by_shard: BTreeMap<(u64, u32), Ranges>,
}

impl Positions {
    /// From a commit payload.
    pub fn load(saved: &[SavedShard]) -> Self {
        let mut by_shard = BTreeMap::new();
        for s in saved {
            let Ok(epoch) = u64::from_str_radix(&s.epoch, 16) else { continue };
            let r: &mut Ranges = by_shard.entry((epoch, s.shard)).or_default();
            r.floor = (s.floor[0], s.floor[1]);
            for [seg, a, b] in &s.done {
                if a < b {
                    r.insert(*seg, *a, *b);
                }
            }
        }
        Self { by_shard }
    }

    /// For a commit payload.
    pub fn save(&self) -> Vec<SavedShard> {
        self.by_shard
            .iter()
            .map(|(&(epoch, shard), r)| SavedShard {
                epoch: format!("{epoch:016x}"),
                shard,
                floor: [r.floor.0, r.floor.1],
                done: r.ranges.iter().map(|(&(s, a), &e)| [s, a, e]).collect(),
            })
            .collect()
    }

    /// Whether the record at `p` is in the set.
    pub fn contains(&self, p: &QueuePosition) -> bool {
        self.by_shard.get(&(p.epoch, p.shard)).is_some_and(|r| r.contains(p.segment, p.offset))
    }

    /// Adds the record at `p` (and raises its shard's floor to `p.floor`).
    pub fn insert(&mut self, p: &QueuePosition) {
        let r = self.by_shard.entry((p.epoch, p.shard)).or_default();
        r.floor = r.floor.max(p.floor);
        if p.offset < p.end {
            r.insert(p.segment, p.offset, p.end);
        }
    }

    /// Adds every range and floor of `other`, then prunes; returns how many
    /// ranges the cap dropped.
    pub fn merge(&mut self, other: &Positions) -> usize {
        for (k, o) in &other.by_shard {
            let r = self.by_shard.entry(*k).or_default();
            r.floor = r.floor.max(o.floor);
            for (&(s, a), &e) in &o.ranges {
                r.insert(s, a, e);
            }
        }
        self.by_shard.values_mut().map(|r| r.prune((0, 0))).sum()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.by_shard.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(seg: u64, off: u64, end: u64, floor: (u64, u64)) -> QueuePosition {
        QueuePosition { epoch: 0xab, shard: 1, segment: seg, offset: off, end, floor }
    }

    #[test]
    fn ranges_merge_prune_and_round_trip() {
        let mut p = Positions::default();
        for (off, end) in [(16, 50), (50, 90), (130, 170), (90, 130)] {
            p.insert(&pos(3, off, end, (0, 0)));
        }
        p.insert(&pos(4, 16, 40, (0, 0)));
        assert_eq!(p.save()[0].done, vec![[3, 16, 170], [4, 16, 40]]);
        assert!(p.contains(&pos(3, 90, 130, (0, 0))));
        assert!(!p.contains(&pos(3, 170, 200, (0, 0))));
        assert!(!p.contains(&QueuePosition { epoch: 0xac, ..pos(3, 16, 50, (0, 0)) }), "another epoch");
        assert!(!p.contains(&QueuePosition { shard: 2, ..pos(3, 16, 50, (0, 0)) }), "another shard");
        // A floor past segment 3 drops it on the next merge.
        let mut q = Positions::default();
        q.insert(&pos(4, 40, 60, (4, 16)));
        p.merge(&q);
        assert_eq!(
            p.save(),
            vec![SavedShard { epoch: "00000000000000ab".into(), shard: 1, floor: [4, 16], done: vec![[4, 16, 60]] }]
        );
        assert_eq!(Positions::load(&p.save()), p);
    }

    #[test]
    fn the_cap_drops_the_oldest() {
        let mut p = Positions::default();
        let mut q = Positions::default();
        for i in 0..(MAX_RANGES as u64 + 10) {
            q.insert(&pos(1, i * 100, i * 100 + 50, (0, 0)));
        }
        assert_eq!(p.merge(&q), 10);
        assert!(!p.contains(&pos(1, 0, 50, (0, 0))));
        assert!(p.contains(&pos(1, (MAX_RANGES as u64 + 9) * 100, 0, (0, 0))));
    }
}
