//! Model-based property test: random sequences of append / read / ack /
//! reopen, checked against a simple in-memory model. Invariants:
//! * a read returns an appended, unacknowledged record not yet delivered in
//!   this process lifetime, with its payload and event count;
//! * a read returns nothing only when the model has nothing undelivered;
//! * after reopen, exactly the unacknowledged records are re-delivered —
//!   acknowledged records never come back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use sluice_queue::{FsyncPolicy, PersistedQueue, QueueConfig, QueueError, RecordId};

#[derive(Clone, Debug)]
enum Op {
    Append {
        shard: usize,
        len: usize,
        events: u32,
    },
    AppendBatch {
        shard: usize,
        n: usize,
    },
    /// Write-through append: claimed records count as delivered.
    AppendClaimed {
        shard: usize,
        len: usize,
    },
    Read,
    /// Ack the delivered record at this index (modulo the delivered count).
    Ack(usize),
    AckBogus,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..4, 0usize..1500, 0u32..10).prop_map(|(shard, len, events)| Op::Append { shard, len, events }),
        1 => (0usize..4, 1usize..6).prop_map(|(shard, n)| Op::AppendBatch { shard, n }),
        3 => (0usize..4, 0usize..1500).prop_map(|(shard, len)| Op::AppendClaimed { shard, len }),
        4 => Just(Op::Read),
        3 => any::<usize>().prop_map(Op::Ack),
        1 => Just(Op::AckBogus),
        1 => Just(Op::Reopen),
    ]
}

fn open(dir: &Path, shards: usize, lazy_checkpoints: bool) -> (PersistedQueue, u64) {
    let (q, report) = PersistedQueue::open(QueueConfig {
        dir: dir.to_path_buf(),
        shards,
        segment_bytes: 4096,
        max_bytes: 1 << 30,
        fsync: FsyncPolicy::Never,
        checkpoint_interval: if lazy_checkpoints { Duration::from_secs(3600) } else { Duration::ZERO },
    })
    .unwrap();
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(report.corrupt_records, 0);
    (q, report.records_recovered)
}

fn run(shards: usize, lazy: bool, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let d = tempfile::tempdir().unwrap();
    let (mut q, _) = open(d.path(), shards, lazy);
    // Unacked records: id -> (payload, events).
    let mut unacked: BTreeMap<RecordId, (Vec<u8>, u32)> = BTreeMap::new();
    let mut delivered: Vec<RecordId> = Vec::new();
    let mut delivered_set: BTreeSet<RecordId> = BTreeSet::new();
    let mut counter = 0u64;
    let mut gone: BTreeSet<RecordId> = BTreeSet::new();

    for op in ops {
        match op {
            Op::Append { shard, len, events } => {
                counter += 1;
                let mut p = counter.to_le_bytes().to_vec();
                p.resize(len.max(8), (counter % 251) as u8);
                let id = q.append(shard, &p, events).unwrap();
                prop_assert!(!unacked.contains_key(&id));
                prop_assert!(!gone.contains(&id), "id reused: {:?}", id);
                unacked.insert(id, (p, events));
            }
            Op::AppendBatch { shard, n } => {
                let ps: Vec<Vec<u8>> = (0..n)
                    .map(|k| {
                        counter += 1;
                        let mut p = counter.to_le_bytes().to_vec();
                        p.resize(8 + k * 300, 1);
                        p
                    })
                    .collect();
                let refs: Vec<(&[u8], u32)> = ps.iter().map(|p| (p.as_slice(), 3)).collect();
                let ids = q.append_batch(shard, &refs).unwrap();
                prop_assert_eq!(ids.len(), n);
                for (id, p) in ids.into_iter().zip(ps) {
                    prop_assert!(!gone.contains(&id), "id reused: {:?}", id);
                    unacked.insert(id, (p, 3));
                }
            }
            Op::AppendClaimed { shard, len } => {
                counter += 1;
                let mut p = counter.to_le_bytes().to_vec();
                p.resize(len.max(8), 7);
                // Claimed only when this shard's readers are caught up (a
                // caught-up shard may still decline, e.g. after a reopen
                // left acknowledged skip ranges at the cursor).
                let caught_up = unacked
                    .keys()
                    .filter(|id| id.shard as usize == shard % shards)
                    .all(|id| delivered_set.contains(id));
                let (id, claimed) = q.append_claimed(shard, &p, 2).unwrap();
                prop_assert!(!claimed || caught_up, "claimed although records were unread");
                prop_assert!(!gone.contains(&id), "id reused: {:?}", id);
                unacked.insert(id, (p, 2));
                if claimed {
                    delivered_set.insert(id);
                    delivered.push(id);
                }
            }
            Op::Read => match q.next(Duration::ZERO).unwrap() {
                Some(r) => {
                    let (p, e) = unacked
                        .get(&r.id)
                        .ok_or_else(|| TestCaseError::fail(format!("delivered acked/unknown {:?}", r.id)))?;
                    prop_assert_eq!(&r.payload, p);
                    prop_assert_eq!(r.events, *e);
                    prop_assert!(delivered_set.insert(r.id), "delivered twice {:?}", r.id);
                    delivered.push(r.id);
                }
                None => prop_assert_eq!(delivered_set.len(), unacked.len(), "record withheld"),
            },
            Op::Ack(i) => {
                if !delivered.is_empty() {
                    let id = delivered.swap_remove(i % delivered.len());
                    delivered_set.remove(&id);
                    q.ack(id).unwrap();
                    unacked.remove(&id);
                    gone.insert(id);
                    prop_assert!(matches!(q.ack(id), Err(QueueError::UnknownRecord(_))));
                }
            }
            Op::AckBogus => {
                let bogus = RecordId { shard: 0, segment: u64::MAX, offset: 16 };
                prop_assert!(matches!(q.ack(bogus), Err(QueueError::UnknownRecord(_))));
            }
            Op::Reopen => {
                drop(q);
                let (nq, recovered) = open(d.path(), shards, lazy);
                q = nq;
                prop_assert_eq!(recovered, unacked.len() as u64);
                delivered.clear();
                delivered_set.clear();
            }
        }
        let st = q.stats();
        prop_assert_eq!(st.records, unacked.len() as u64);
        prop_assert_eq!(st.events, unacked.values().map(|(_, e)| u64::from(*e)).sum::<u64>());
        prop_assert_eq!(st.bytes, unacked.values().map(|(p, _)| 24 + p.len() as u64).sum::<u64>());
    }
    drop(q);
    let (q, recovered) = open(d.path(), shards, lazy);
    prop_assert_eq!(recovered, unacked.len() as u64);
    let mut got = BTreeSet::new();
    while let Some(r) = q.next(Duration::ZERO).unwrap() {
        prop_assert_eq!(&r.payload, &unacked[&r.id].0);
        prop_assert!(got.insert(r.id));
    }
    prop_assert_eq!(got, unacked.keys().copied().collect::<BTreeSet<_>>());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn model_holds(shards in 1usize..4, lazy in any::<bool>(), ops in prop::collection::vec(op(), 1..80)) {
        run(shards, lazy, ops)?;
    }
}
