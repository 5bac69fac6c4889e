//! A bound on documents handed to tantivy's indexing threads and not yet
//! indexed, so documents can be handed over in batches.
//!
//! Why: tantivy's `IndexWriter` queues operations in a bounded channel of
//! 10,000 *messages*. One document per message (`add_document`) keeps that
//! bound small, but when the indexing thread is the bottleneck (it is, on
//! two cores) every document the caller adds meets a full channel: the
//! caller spins, yields and parks once per document, and the indexing
//! thread wakes it once per document — 13 % of the process's CPU in a
//! TCP → queue → store run (docs/benchmarks/journal.md, "documents handed to tantivy in
//! batches").
//! Handing over a batch per message (`IndexWriter::run`) removes the
//! per-document wake-ups but makes the channel's bound 10,000 *batches*.
//! This module restores a bound in documents: every document carries a
//! [`DocGuard`] that counts it while it exists, tantivy drops the document
//! once it is indexed, and the caller waits ([`InFlight::reserve`]) while the
//! count is at the limit, to be woken once half of it has drained.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// Documents handed over and not yet dropped by the indexer, with a limit.
#[derive(Debug)]
pub struct InFlight {
    docs: AtomicUsize,
    limit: usize,
    waiting: AtomicBool,
    lock: Mutex<()>,
    drained: Condvar,
}

/// Counts one document while it lives; see the module docs.
#[derive(Debug)]
pub struct DocGuard(Arc<InFlight>);

/// A waiting caller re-checks at least this often (a safety net; wake-ups
/// come from [`DocGuard`]'s drop).
const RECHECK: Duration = Duration::from_millis(5);

impl InFlight {
    /// At most `limit` documents in flight (a batch larger than the limit
    /// still goes through when nothing else is in flight).
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            docs: AtomicUsize::new(0),
            limit: limit.max(1),
            waiting: AtomicBool::new(false),
            lock: Mutex::new(()),
            drained: Condvar::new(),
        })
    }

    /// Documents currently counted.
    pub fn current(&self) -> usize {
        self.docs.load(Ordering::SeqCst)
    }

    /// Waits until `n` more documents fit under the limit, then counts them;
    /// returns one guard per document.
    pub fn reserve(self: &Arc<Self>, n: usize) -> Vec<DocGuard> {
        loop {
            let cur = self.docs.load(Ordering::SeqCst);
            if cur == 0 || cur + n <= self.limit {
                if self.docs.compare_exchange(cur, cur + n, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                    return (0..n).map(|_| DocGuard(Arc::clone(self))).collect();
                }
                continue;
            }
            let mut g = self.lock.lock();
            self.waiting.store(true, Ordering::SeqCst);
            // Re-checked after announcing the wait: a drop that came before
            // `waiting` was set is seen here, one after it notifies.
            let cur = self.docs.load(Ordering::SeqCst);
            if cur == 0 || cur + n <= self.limit {
                self.waiting.store(false, Ordering::SeqCst);
                continue;
            }
            let _ = self.drained.wait_for(&mut g, RECHECK);
            self.waiting.store(false, Ordering::SeqCst);
        }
    }
}

impl Drop for DocGuard {
    fn drop(&mut self) {
        let f = &self.0;
        let now = f.docs.fetch_sub(1, Ordering::SeqCst) - 1;
        // Wake a waiting caller once half the limit has drained, not per
        // document (that per-document ping-pong is what this module avoids).
        if now <= f.limit / 2 && f.waiting.load(Ordering::SeqCst) {
            let _g = f.lock.lock();
            f.drained.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_while_alive_and_blocks_at_the_limit() {
        let f = InFlight::new(4);
        let a = f.reserve(3);
        assert_eq!(f.current(), 3);
        // A batch bigger than the limit passes alone only when nothing is in flight.
        let (tx, rx) = std::sync::mpsc::channel();
        let f2 = Arc::clone(&f);
        let waiter = std::thread::spawn(move || {
            let g = f2.reserve(2);
            tx.send(g.len()).unwrap();
            g
        });
        // The waiter cannot get 2 more while 3 of 4 are counted.
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
        drop(a);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 2);
        let b = waiter.join().unwrap();
        assert_eq!(f.current(), 2);
        drop(b);
        assert_eq!(f.current(), 0);
        let big = f.reserve(10);
        assert_eq!((big.len(), f.current()), (10, 10));
        drop(big);
        assert_eq!(f.current(), 0);
    }
}
