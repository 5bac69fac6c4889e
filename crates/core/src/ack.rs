//! Acknowledgement tokens: how a sink tells the queue a batch is safe.
//!
//! Each batch read from a queue carries an [`AckToken`]. Fan-out to several
//! sinks clones it; every clone must be resolved with [`AckToken::delivered`].
//! When the last clone goes away the token's callback runs once with
//! [`Delivery::Delivered`] if every clone was delivered, else
//! [`Delivery::Failed`] — a clone dropped without being delivered (a sink that
//! gave up, a task that was cancelled) counts as a failure, so nothing is
//! committed by accident.
//!
//! A batch read from a persisted queue also carries its **origins**: the
//! queue positions ([`QueuePosition`]) of the records it was made of, one per
//! record, which [`crate::Event::origin`] indexes. A sink that commits
//! atomically (the embedded store) records them in the same commit and skips
//! events of a record it already committed when the queue replays it after
//! a crash (docs/adr/0060-exactly-once-into-the-store.md).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// The outcome of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Every sink that received the batch wrote it.
    Delivered,
    /// At least one clone was dropped without being delivered.
    Failed,
}

type Callback = Box<dyn FnOnce(Delivery) + Send>;

/// Where a queue record is, for sinks that skip what they already stored
/// (see the module docs and `docs/specs/queue-format.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueuePosition {
    /// The queue's epoch: a random id of the queue directory, new whenever
    /// positions could be reused (a new directory, a reboot).
    pub epoch: u64,
    /// Writer shard.
    pub shard: u32,
    /// Segment id.
    pub segment: u64,
    /// Offset of the record's header in the segment.
    pub offset: u64,
    /// Offset just past the record.
    pub end: u64,
    /// The shard's checkpointed frontier `(segment, offset)` when the record
    /// was delivered: nothing before it is ever delivered again.
    pub floor: (u64, u64),
}

struct Inner {
    failed: AtomicBool,
    callback: Mutex<Option<Callback>>,
    origins: Box<[QueuePosition]>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let status = if self.failed.load(Ordering::Acquire) { Delivery::Failed } else { Delivery::Delivered };
        if let Some(cb) = self.callback.get_mut().take() {
            cb(status);
        }
    }
}

/// A reference-counted acknowledgement handle; see the module docs.
pub struct AckToken {
    inner: Arc<Inner>,
    resolved: bool,
}

impl AckToken {
    /// A token that calls `callback` once, when the last clone is resolved.
    pub fn new(callback: impl FnOnce(Delivery) + Send + 'static) -> Self {
        Self {
            inner: Arc::new(Inner {
                failed: AtomicBool::new(false),
                callback: Mutex::new(Some(Box::new(callback))),
                origins: Box::default(),
            }),
            resolved: false,
        }
    }

    /// A token nobody waits for (memory queue, tests).
    pub fn none() -> Self {
        Self {
            inner: Arc::new(Inner {
                failed: AtomicBool::new(false),
                callback: Mutex::new(None),
                origins: Box::default(),
            }),
            resolved: false,
        }
    }

    /// This token with the queue positions of the batch's records (set
    /// before the token is cloned; a clone keeps what was set).
    pub fn with_origins(mut self, origins: Vec<QueuePosition>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.origins = origins.into_boxed_slice();
        }
        self
    }

    /// The queue positions of the batch's records (empty when it did not come
    /// from a persisted queue); [`crate::Event::origin`] indexes them.
    pub fn origins(&self) -> &[QueuePosition] {
        &self.inner.origins
    }

    /// A token that resolves all of `parents` with its own outcome: used when
    /// several queue records are merged into one batch.
    pub fn merge(parents: Vec<AckToken>) -> Self {
        if parents.len() == 1 {
            if let Some(p) = parents.into_iter().next() {
                return p;
            }
            return Self::none();
        }
        Self::new(move |status| {
            for p in parents {
                match status {
                    Delivery::Delivered => p.delivered(),
                    Delivery::Failed => p.failed(),
                }
            }
        })
    }

    /// This clone's part is done and succeeded.
    pub fn delivered(mut self) {
        self.resolved = true;
    }

    /// This clone's part failed: the batch will not be committed.
    pub fn failed(mut self) {
        self.inner.failed.store(true, Ordering::Release);
        self.resolved = true;
    }
}

impl Clone for AckToken {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner), resolved: false }
    }
}

impl Drop for AckToken {
    fn drop(&mut self) {
        if !self.resolved {
            self.inner.failed.store(true, Ordering::Release);
        }
    }
}

impl fmt::Debug for AckToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AckToken").field("clones", &Arc::strong_count(&self.inner)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn token() -> (AckToken, mpsc::Receiver<Delivery>) {
        let (tx, rx) = mpsc::channel();
        (AckToken::new(move |d| tx.send(d).unwrap()), rx)
    }

    #[test]
    fn all_clones_delivered() {
        let (t, rx) = token();
        let c = t.clone();
        t.delivered();
        assert!(rx.try_recv().is_err(), "must wait for the last clone");
        c.delivered();
        assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered);
    }

    #[test]
    fn dropped_clone_is_failure() {
        let (t, rx) = token();
        let c = t.clone();
        t.delivered();
        drop(c);
        assert_eq!(rx.try_recv().unwrap(), Delivery::Failed);
    }

    #[test]
    fn merge_propagates() {
        let (a, ra) = token();
        let (b, rb) = token();
        AckToken::merge(vec![a, b]).delivered();
        assert_eq!(ra.try_recv().unwrap(), Delivery::Delivered);
        assert_eq!(rb.try_recv().unwrap(), Delivery::Delivered);
        let (a, ra) = token();
        let (b, rb) = token();
        AckToken::merge(vec![a, b]).failed();
        assert_eq!(ra.try_recv().unwrap(), Delivery::Failed);
        assert_eq!(rb.try_recv().unwrap(), Delivery::Failed);
    }

    #[test]
    fn origins_ride_on_every_clone() {
        let p = QueuePosition { epoch: 7, shard: 1, segment: 2, offset: 16, end: 80, floor: (2, 16) };
        let (t, rx) = token();
        let t = t.with_origins(vec![p]);
        let c = t.clone();
        assert_eq!(c.origins(), &[p]);
        assert!(AckToken::none().origins().is_empty());
        t.delivered();
        c.delivered();
        assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered);
    }
}
