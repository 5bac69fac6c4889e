//! Tests of the `shard` module.

use super::*;

fn open_shard(dir: &Path) -> Shard {
    let cfg = QueueConfig {
        dir: dir.to_path_buf(),
        shards: 1,
        segment_bytes: 1 << 20,
        max_bytes: 1 << 30,
        fsync: FsyncPolicy::Never,
        checkpoint_interval: Duration::from_secs(3600),
    };
    let mut report = OpenReport::default();
    Shard::open(dir.join("s"), 0, &cfg, Arc::default(), &mut report).unwrap()
}

#[test]
fn acked_ranges_merge_and_prune_at_frontier() {
    let d = tempfile::tempdir().unwrap();
    let shard = open_shard(d.path());
    let recs: Vec<(&[u8], u32)> = vec![(b"0123456789", 1); 5];
    shard.shared.try_reserve(5 * 34, u64::MAX);
    let ids = shard.append_batch(&recs, 5 * 34).unwrap();
    let offs: Vec<u64> = ids.iter().map(|i| i.offset).collect();
    assert_eq!(offs, vec![16, 50, 84, 118, 152]);
    for _ in 0..5 {
        assert!(shard.try_next().unwrap().is_some());
    }
    assert!(shard.try_next().unwrap().is_none());
    shard.ack(ids[3]).unwrap();
    shard.ack(ids[1]).unwrap();
    shard.ack(ids[2]).unwrap();
    {
        let st = shard.read.lock();
        assert_eq!(st.acked.iter().collect::<Vec<_>>(), vec![(&(0, 50), &152)]);
        assert_eq!(st.frontier(), (0, 16));
        assert!(st.dirty);
    }
    shard.ack(ids[0]).unwrap();
    let st = shard.read.lock();
    assert!(st.acked.is_empty());
    assert_eq!(st.frontier(), (0, 152));
    assert_eq!(shard.shared.records.load(Ordering::SeqCst), 1);
}
