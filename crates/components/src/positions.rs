//! Acknowledged read positions shared by the file-reading sources (`file`,
//! `evtx`): the on-disk registry ([`registry`], `docs/specs/file-positions.md`),
//! the state its writer thread and the ack callbacks share ([`Shared`]), and
//! loading it without ever failing a start ([`load_registry`]).

pub mod registry;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use sluice_core::component::SourceContext;
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::{AckToken, Delivery};

use self::registry::Registry;

/// State shared by the reader thread, the registry writer and the ack
/// callbacks (the `evtx` source uses it too).
pub struct Shared {
    /// The registry itself.
    pub reg: Mutex<Registry>,
    cv: Condvar,
    /// Serialises writes of the registry file.
    save_lock: Mutex<()>,
    path: PathBuf,
    /// The reader stopped: acknowledgements arriving now write the registry
    /// themselves (the writer thread is gone).
    closing: AtomicBool,
    stop: AtomicBool,
    source: String,
    ack_failures: Arc<Counter>,
    registry_errors: Arc<Counter>,
}

impl Shared {
    /// State over `reg`, stored at `path`, counting into `metrics`.
    pub fn new(reg: Registry, path: PathBuf, source: &str, metrics: &ComponentMetrics) -> Self {
        Self {
            reg: Mutex::new(reg),
            cv: Condvar::new(),
            save_lock: Mutex::new(()),
            path,
            closing: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            source: source.to_string(),
            ack_failures: metrics.counter("ack_failures"),
            registry_errors: metrics.counter("registry_errors"),
        }
    }

    /// Starts the registry writer thread.
    pub fn start_writer(self: &Arc<Self>, min_interval: Duration) -> Result<std::thread::JoinHandle<()>, String> {
        let shared = Arc::clone(self);
        std::thread::Builder::new()
            .name(format!("registry-{}", self.source))
            .spawn(move || shared.writer(min_interval))
            .map_err(|e| format!("cannot start the registry writer: {e}"))
    }

    /// Stops the writer (joined on a blocking thread) and writes a last
    /// time; acknowledgements that arrive later write the registry themselves.
    pub async fn stop_writer(&self, writer: std::thread::JoinHandle<()>) {
        self.closing.store(true, Ordering::SeqCst);
        self.stop.store(true, Ordering::SeqCst);
        self.cv.notify_all();
        let _ = tokio::task::spawn_blocking(move || {
            let _ = writer.join();
        })
        .await;
        self.save();
    }

    /// A token whose delivery moves `entry`'s frontier to `end`, after
    /// recording the batch as sent.
    pub fn token(self: &Arc<Self>, entry: u64, end: u64) -> AckToken {
        self.reg.lock().sent(entry, end);
        let shared = Arc::clone(self);
        AckToken::new(move |d| shared.resolved(entry, end, d))
    }

    /// Writes the registry if it changed.
    pub fn save(&self) {
        let _g = self.save_lock.lock();
        let snapshot = {
            let mut reg = self.reg.lock();
            if !reg.dirty {
                return;
            }
            reg.dirty = false;
            reg.to_disk()
        };
        if let Err(e) = registry::save(&self.path, snapshot) {
            self.registry_errors.inc();
            tracing::error!(source = %self.source, error = %e, "cannot write the positions registry");
            self.reg.lock().dirty = true;
        }
    }

    /// A batch's acknowledgement.
    fn resolved(&self, entry: u64, end: u64, d: Delivery) {
        let delivered = d == Delivery::Delivered;
        if !delivered {
            self.ack_failures.inc();
        }
        let moved = self.reg.lock().resolve(entry, end, delivered);
        if moved {
            if self.closing.load(Ordering::SeqCst) {
                self.save();
            } else {
                self.cv.notify_one();
            }
        }
    }

    /// The registry writer thread.
    fn writer(&self, min_interval: Duration) {
        loop {
            {
                let mut reg = self.reg.lock();
                while !reg.dirty && !self.stop.load(Ordering::SeqCst) {
                    self.cv.wait_for(&mut reg, Duration::from_secs(1));
                }
            }
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            self.save();
            if !min_interval.is_zero() {
                std::thread::sleep(min_interval);
            }
        }
    }
}

/// Loads a positions registry. Never a crash: a damaged file is kept aside
/// for inspection and the source starts over (files are read again:
/// duplicates, never loss).
pub fn load_registry(path: &Path, cx: &SourceContext) -> Vec<registry::DiskEntry> {
    match registry::load(path) {
        Ok(files) => files,
        Err(e) => {
            cx.metrics.counter("registry_errors").inc();
            let aside = path.with_extension(format!("corrupt-{}", registry::now_secs()));
            let _ = std::fs::rename(path, &aside);
            tracing::error!(source = %cx.id, error = %e, moved_to = %aside.display(), "positions registry unreadable; starting without it");
            Vec::new()
        }
    }
}
