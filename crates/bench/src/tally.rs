//! Exact accounting of received sequence numbers: how many distinct events
//! of the run arrived, how many arrived more than once, and which never did.
//!
//! One byte per event of the run (a saturating arrival count), shared by
//! every receiving thread; `unique` and `duplicates` are counted exactly
//! beside it, so `sent = received + lost` and every extra copy is in
//! `duplicated`, however many there were.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use serde::{Deserialize, Serialize};

/// Arrival counts per sequence number.
#[derive(Debug)]
pub struct Tally {
    counts: Vec<AtomicU8>,
    unique: AtomicU64,
    duplicates: AtomicU64,
    out_of_range: AtomicU64,
}

/// What happened to the events of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounting {
    /// Events the generator sent.
    pub sent: u64,
    /// Distinct events received.
    pub received: u64,
    /// Extra copies received (an event received 3 times counts 2).
    pub duplicated: u64,
    /// Sent and never received (`sent - received`).
    pub lost: u64,
    /// Events with this run's id but a sequence number the run never sent.
    pub out_of_range: u64,
    /// The first missing sequence number ranges (inclusive), at most 20.
    pub missing: Vec<(u64, u64)>,
}

/// How many missing ranges a report lists.
const MISSING_RANGES: usize = 20;

impl Tally {
    /// A tally for sequence numbers `0..count`.
    pub fn new(count: u64) -> Self {
        let mut counts = Vec::with_capacity(count as usize);
        counts.resize_with(count as usize, || AtomicU8::new(0));
        Self { counts, unique: AtomicU64::new(0), duplicates: AtomicU64::new(0), out_of_range: AtomicU64::new(0) }
    }

    /// Records an arrival; `Some(true)` for the first one, `Some(false)` for
    /// a duplicate, `None` when `seq` is out of range.
    #[inline]
    pub fn record(&self, seq: u64) -> Option<bool> {
        let Some(c) = self.counts.get(seq as usize) else {
            self.out_of_range.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let prev = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_add(1))).unwrap_or(0);
        if prev == 0 {
            self.unique.fetch_add(1, Ordering::Relaxed);
            Some(true)
        } else {
            self.duplicates.fetch_add(1, Ordering::Relaxed);
            Some(false)
        }
    }

    /// Distinct events received so far.
    pub fn unique(&self) -> u64 {
        self.unique.load(Ordering::Relaxed)
    }

    /// Duplicates so far.
    pub fn duplicates(&self) -> u64 {
        self.duplicates.load(Ordering::Relaxed)
    }

    /// The accounting, given that `sent` events (sequence numbers
    /// `0..sent`) were sent.
    pub fn accounting(&self, sent: u64) -> Accounting {
        let mut missing = Vec::new();
        let mut open: Option<u64> = None;
        let end = (sent as usize).min(self.counts.len());
        for (i, c) in self.counts[..end].iter().enumerate() {
            let zero = c.load(Ordering::Relaxed) == 0;
            match (zero, open) {
                (true, None) => open = Some(i as u64),
                (false, Some(s)) => {
                    missing.push((s, i as u64 - 1));
                    open = None;
                    if missing.len() == MISSING_RANGES {
                        break;
                    }
                }
                _ => {}
            }
        }
        if let (Some(s), true) = (open, missing.len() < MISSING_RANGES) {
            missing.push((s, end as u64 - 1));
        }
        let received = self.unique();
        Accounting {
            sent,
            received,
            duplicated: self.duplicates(),
            lost: sent.saturating_sub(received),
            out_of_range: self.out_of_range.load(Ordering::Relaxed),
            missing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_unique_duplicates_and_missing_ranges() {
        let t = Tally::new(10);
        for s in [0, 1, 2, 2, 2, 5, 9, 9] {
            t.record(s);
        }
        assert_eq!(t.record(10), None);
        let a = t.accounting(10);
        assert_eq!(
            a,
            Accounting {
                sent: 10,
                received: 5,
                duplicated: 3,
                lost: 5,
                out_of_range: 1,
                missing: vec![(3, 4), (6, 8)]
            }
        );
        assert_eq!(a.sent, a.received + a.lost);
        // Only 3 were sent: the rest is not missing.
        assert_eq!(Tally::new(10).accounting(3).missing, vec![(0, 2)]);
    }

    #[test]
    fn duplicates_beyond_255_are_counted() {
        let t = Tally::new(1);
        for _ in 0..1000 {
            t.record(0);
        }
        assert_eq!(t.accounting(1).duplicated, 999);
    }
}
