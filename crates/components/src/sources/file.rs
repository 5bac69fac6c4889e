//! `file`: tails log files — the agent's main input (Filebeat's `log` input).
//!
//! What it does:
//! - **Discovery**: `include` globs (minus `exclude`) are scanned at start and
//!   every `scan_interval`, so new files are picked up while running.
//! - **Identity**: a file is its device + inode plus a fingerprint of its
//!   first 1 KiB (inodes are reused). A file renamed within or out of the
//!   globs keeps being read through its open descriptor (rotation by rename);
//!   a deleted file is read to its end, then closed.
//! - **Truncation** (size below the read position, or first bytes changed) is
//!   counted and reading restarts at 0. The old content's position is kept:
//!   a *copy* of it (copytruncate's `app.log.1`: another inode whose first
//!   bytes equal the old content's) is read only from where the original
//!   stopped, so with copytruncate every line arrives once. A copy of a file
//!   that is still being read and was not truncated is not read at all (its
//!   lines arrive through the original).
//! - **Lines**: big `pread`s (`read_buffer`), `memchr` splitting, batches of
//!   `batch_events`; no syscall per line. `message` is the line (without
//!   `\n` / `\r\n`), `source` the file path, `offset_field` (optional) the
//!   line's byte offset. Empty lines are skipped. A last line without a
//!   newline is emitted when the file is closed (deleted, inactive).
//!   `encoding = "utf-8"` replaces invalid bytes with U+FFFD (counted in
//!   `invalid_utf8_lines`, never dropped); `"latin-1"` maps every byte.
//! - **Long lines** (over `max_line_bytes`): `long_lines = "truncate"` keeps
//!   the head (tag `_truncated`) and skips the rest without buffering it;
//!   `"split"` emits pieces of `max_line_bytes` (tag `_split`). Counted in
//!   `long_lines`. Memory stays bounded by `max_line_bytes` + `read_buffer`.
//! - **Multiline** joining: see [`multiline`].
//! - **Positions** ([`registry`], `docs/specs/file-positions.md`): under
//!   `<data_dir>/file_positions/<pipeline>/<id>.json`, advanced only when a
//!   batch's [`AckToken`] is delivered ([`Output::send_acked`]), over the
//!   contiguous acknowledged prefix of each file, and written atomically. A
//!   restart — even after `kill -9` — resumes at that frontier: nothing is
//!   lost and only unacknowledged batches are read again.
//! - `start_at = "end"` applies on the source's first run (no positions
//!   registry yet) to the files found by the first scan; every other file is
//!   read from its beginning (a file created by rotation must not lose lines).
//!
//! Bad input never stops the source: a path that is a directory, a file it
//! may not read (EACCES), an unreadable directory are logged once per path
//! (until they change) and counted (`not_regular_files`,
//! `permission_denied`, `open_errors`); the other files keep being read.
//!
//! Threads: one reader thread (scans, reads, sends; it waits in `send` when
//! the queue is full, which is the back-pressure), and one registry writer
//! (acknowledgements arrive while the reader waits).

pub mod multiline;
pub mod reader;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Closed, Output, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration};
use sluice_core::metrics::{ComponentMetrics, Counter};
use tokio_util::sync::CancellationToken;

use self::multiline::{Joiner, MultilineConfig};
use self::reader::{read_full_at, Counters, Reader, Settings, Step};
use crate::positions::registry::{Registry, FINGERPRINT_BYTES};
use crate::positions::{load_registry, Shared};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "file",
    summary: "tails files matched by globs: rotation, truncation, multiline, acknowledged positions",
    example: "include = [\"/var/log/*.log\"]\nexclude = [\"*.gz\"]\nstart_at = \"end\"\n",
    build,
};

/// Where files seen for the first time start.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StartAt {
    /// From their first byte.
    Beginning,
    /// After their last complete line (first run only, see the module docs).
    End,
}

/// What to do with lines longer than `max_line_bytes`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LongLines {
    /// Keep the first `max_line_bytes`, skip the rest (tag `_truncated`).
    Truncate,
    /// Emit pieces of `max_line_bytes` (tag `_split`).
    Split,
}

/// How bytes become text.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8; invalid bytes become U+FFFD (counted).
    #[serde(rename = "utf-8", alias = "utf8")]
    Utf8,
    /// ISO-8859-1: every byte is one character.
    #[serde(rename = "latin-1", alias = "latin1", alias = "iso-8859-1")]
    Latin1,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Glob patterns of files to read (`*`, `?`, `[abc]`, `**`).
    include: Vec<String>,
    /// Glob patterns of files to leave out; a pattern without `/` is matched
    /// against the file name, otherwise against the whole path.
    #[serde(default)]
    exclude: Vec<String>,
    /// `beginning` (default) or `end`, for files found on the first run.
    #[serde(default = "default_start_at")]
    start_at: StartAt,
    /// How often the globs are scanned for new files (default 1s).
    #[serde(default = "default_scan_interval")]
    scan_interval: HumanDuration,
    /// How long the reader sleeps when no file had new data (default 250ms).
    #[serde(default = "default_poll_interval")]
    poll_interval: HumanDuration,
    /// Longest line kept whole (default 1MiB); see `long_lines`.
    #[serde(default = "default_max_line")]
    max_line_bytes: ByteSize,
    /// `truncate` (default) or `split`.
    #[serde(default = "default_long_lines")]
    long_lines: LongLines,
    /// `utf-8` (default) or `latin-1`.
    #[serde(default = "default_encoding")]
    encoding: Encoding,
    /// Field that gets each line's byte offset in its file (none by default).
    #[serde(default)]
    offset_field: Option<String>,
    /// Bytes per read (default 256KiB).
    #[serde(default = "default_read_buffer")]
    read_buffer: ByteSize,
    /// Most events per batch (default 1024).
    #[serde(default = "default_batch_events")]
    batch_events: usize,
    /// Close a file that did not grow for this long (default 5m); it is
    /// reopened by a scan when it grows again.
    #[serde(default = "default_close_inactive")]
    close_inactive: HumanDuration,
    /// Least time between two writes of the positions registry (default 0s:
    /// written as soon as acknowledgements moved a frontier, coalescing those
    /// that arrive while it is written). Larger values fsync less often but
    /// re-read the batches acknowledged in that window after a crash.
    #[serde(default = "default_registry_flush")]
    registry_flush: HumanDuration,
    /// Forget the position of a file not seen for this long (default 24h).
    #[serde(default = "default_forget_after")]
    forget_after: HumanDuration,
    /// Multiline joining (none by default).
    #[serde(default)]
    multiline: Option<MultilineConfig>,
}

fn default_start_at() -> StartAt {
    StartAt::Beginning
}
fn default_scan_interval() -> HumanDuration {
    HumanDuration(Duration::from_secs(1))
}
fn default_poll_interval() -> HumanDuration {
    HumanDuration(Duration::from_millis(250))
}
fn default_max_line() -> ByteSize {
    ByteSize(1 << 20)
}
fn default_long_lines() -> LongLines {
    LongLines::Truncate
}
fn default_encoding() -> Encoding {
    Encoding::Utf8
}
fn default_read_buffer() -> ByteSize {
    ByteSize(256 << 10)
}
fn default_batch_events() -> usize {
    1024
}
fn default_close_inactive() -> HumanDuration {
    HumanDuration(Duration::from_secs(300))
}
fn default_registry_flush() -> HumanDuration {
    HumanDuration(Duration::ZERO)
}
fn default_forget_after() -> HumanDuration {
    HumanDuration(Duration::from_secs(24 * 3600))
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    if c.include.is_empty() {
        return Err(cx.error("include", "at least one glob pattern is needed"));
    }
    for (i, p) in c.include.iter().enumerate() {
        glob::Pattern::new(p).map_err(|e| cx.error(&format!("include[{i}]"), format!("invalid glob {p:?}: {e}")))?;
    }
    let mut exclude = Vec::new();
    for (i, p) in c.exclude.iter().enumerate() {
        let pat = glob::Pattern::new(p)
            .map_err(|e| cx.error(&format!("exclude[{i}]"), format!("invalid glob {p:?}: {e}")))?;
        exclude.push((pat, p.contains('/')));
    }
    if c.max_line_bytes.0 == 0 || c.max_line_bytes.0 > (1 << 30) {
        return Err(cx.error("max_line_bytes", "must be between 1 byte and 1GiB"));
    }
    if c.read_buffer.0 < 4096 || c.read_buffer.0 > (64 << 20) {
        return Err(cx.error("read_buffer", "must be between 4KiB and 64MiB"));
    }
    if c.batch_events == 0 {
        return Err(cx.error("batch_events", "must be at least 1"));
    }
    if c.scan_interval.0.is_zero() || c.poll_interval.0.is_zero() {
        return Err(cx.error(
            if c.scan_interval.0.is_zero() { "scan_interval" } else { "poll_interval" },
            "must be greater than 0",
        ));
    }
    let joiner = match &c.multiline {
        Some(m) => Some(Joiner::new(m).map_err(|e| cx.error("multiline.pattern", e))?),
        None => None,
    };
    if c.offset_field.as_deref().is_some_and(|f| f.is_empty() || f == "message") {
        return Err(cx.error("offset_field", "must be a field name other than `message`"));
    }
    let registry_path = cx.data_dir.join("file_positions").join(&cx.pipeline).join(format!("{}.json", cx.id));
    Ok(Box::new(FileSource {
        include: c.include,
        exclude,
        start_at: c.start_at,
        scan_interval: c.scan_interval.0,
        poll_interval: c.poll_interval.0,
        registry_flush: c.registry_flush.0,
        forget_after: c.forget_after.0,
        registry_path,
        settings: Settings {
            max_line: c.max_line_bytes.0 as usize,
            split_long: c.long_lines == LongLines::Split,
            latin1: c.encoding == Encoding::Latin1,
            offset_field: c.offset_field,
            read_buffer: c.read_buffer.0 as usize,
            batch_events: c.batch_events,
            joiner,
            close_inactive: c.close_inactive.0,
        },
    }))
}

struct FileSource {
    include: Vec<String>,
    exclude: Vec<(glob::Pattern, bool)>,
    start_at: StartAt,
    scan_interval: Duration,
    poll_interval: Duration,
    registry_flush: Duration,
    forget_after: Duration,
    registry_path: PathBuf,
    settings: Settings,
}

#[async_trait]
impl Source for FileSource {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let loaded = load_registry(&self.registry_path, &cx);
        let first_run = loaded.is_empty() && !self.registry_path.exists();
        tracing::info!(source = %cx.id, registry = %self.registry_path.display(), files = loaded.len(), "file source starting");
        let shared =
            Arc::new(Shared::new(Registry::from_disk(loaded), self.registry_path.clone(), &cx.id, &cx.metrics));
        let writer = shared.start_writer(self.registry_flush)?;
        let handle = tokio::runtime::Handle::current();
        let span = tracing::Span::current();
        let shared2 = Arc::clone(&shared);
        let metrics = Arc::clone(&cx.metrics);
        let tailer_cx = cx.clone();
        let result = tokio::task::spawn_blocking(move || {
            let _e = span.enter();
            let mut t = Tailer::new(*self, shared2, handle, tailer_cx, first_run);
            t.run()
        })
        .await;
        // From here on acknowledgements write the registry themselves.
        shared.stop_writer(writer).await;
        let in_flight = shared.reg.lock().in_flight;
        tracing::info!(source = %cx.id, in_flight, failures = metrics.counter("ack_failures").get(), "file source stopped");
        match result {
            Ok(r) => r,
            Err(e) => Err(format!("file source reader panicked: {e}").into()),
        }
    }
}

/// Why a path is not being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    NotRegular,
    PermissionDenied,
    Other,
}

/// The reader thread's state.
struct Tailer {
    cfg: FileSource,
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
    out: Arc<dyn Output>,
    shutdown: CancellationToken,
    metrics: Arc<ComponentMetrics>,
    id: String,
    counters: Counters,
    readers: Vec<Reader>,
    problems: HashMap<PathBuf, Problem>,
    first_scan: bool,
    first_run: bool,
    c_opened: Arc<Counter>,
    c_closed: Arc<Counter>,
    c_truncations: Arc<Counter>,
    c_not_regular: Arc<Counter>,
    c_denied: Arc<Counter>,
    c_open_errors: Arc<Counter>,
    c_read_errors: Arc<Counter>,
    c_copies: Arc<Counter>,
}

impl Tailer {
    fn new(
        cfg: FileSource,
        shared: Arc<Shared>,
        handle: tokio::runtime::Handle,
        cx: SourceContext,
        first_run: bool,
    ) -> Self {
        let m = &cx.metrics;
        Self {
            counters: Counters {
                long_lines: m.counter("long_lines"),
                invalid_utf8: m.counter("invalid_utf8_lines"),
                multiline_limits: m.counter("multiline_limits"),
            },
            c_opened: m.counter("files_opened"),
            c_closed: m.counter("files_closed"),
            c_truncations: m.counter("truncations"),
            c_not_regular: m.counter("not_regular_files"),
            c_denied: m.counter("permission_denied"),
            c_open_errors: m.counter("open_errors"),
            c_read_errors: m.counter("read_errors"),
            c_copies: m.counter("copies_followed"),
            cfg,
            shared,
            handle,
            out: cx.out,
            shutdown: cx.shutdown,
            metrics: cx.metrics,
            id: cx.id,
            readers: Vec::new(),
            problems: HashMap::new(),
            first_scan: true,
            first_run,
        }
    }

    fn run(&mut self) -> Result<(), BoxError> {
        let mut last_scan: Option<Instant> = None;
        while !self.shutdown.is_cancelled() {
            if last_scan.is_none_or(|t| t.elapsed() >= self.cfg.scan_interval) {
                self.scan();
                last_scan = Some(Instant::now());
            }
            let progressed = match self.poll_all() {
                Ok(p) => p,
                Err(Closed) => return Ok(()),
            };
            if !progressed {
                let until = Instant::now() + self.cfg.poll_interval;
                while Instant::now() < until && !self.shutdown.is_cancelled() {
                    std::thread::sleep((until - Instant::now()).min(Duration::from_millis(50)));
                }
            }
        }
        Ok(())
    }

    /// One read round over every open file; whether any had data.
    fn poll_all(&mut self) -> Result<bool, Closed> {
        let mut progressed = false;
        let mut i = 0;
        while i < self.readers.len() {
            if self.shutdown.is_cancelled() {
                return Err(Closed);
            }
            let now = Instant::now();
            let step = self.readers[i].poll(&self.cfg.settings, &self.counters, now);
            match step {
                Ok(Step::Data) => {
                    progressed = true;
                    self.send_batches(i)?;
                }
                Ok(Step::Idle) => self.send_batches(i)?,
                Ok(Step::Truncated) => {
                    progressed = true;
                    self.truncated(i)?;
                }
                Ok(Step::Finished { deleted }) => {
                    self.send_batches(i)?;
                    self.close(i, deleted);
                    continue;
                }
                Err(e) => {
                    self.c_read_errors.inc();
                    tracing::warn!(source = %self.id, path = %self.readers[i].path.display(), error = %e, "read failed; closing the file (a scan reopens it)");
                    self.close(i, false);
                    continue;
                }
            }
            i += 1;
        }
        Ok(progressed)
    }

    /// Sends what reader `i` produced, each batch with a token that moves its
    /// file's frontier when delivered.
    fn send_batches(&mut self, i: usize) -> Result<(), Closed> {
        let r = &mut self.readers[i];
        let entry = r.entry;
        let batches = r.take_batches();
        {
            // Keep the entry's fingerprint as long as the reader's (for copies
            // and for the stored registry).
            let mut reg = self.shared.reg.lock();
            if reg.get(entry).is_some_and(|e| e.prefix.len() < r.prefix.len()) {
                if let Some(e) = reg.get_mut(entry) {
                    e.set_prefix(&r.prefix);
                }
            }
            if batches.is_empty() {
                reg.consumed(entry, r.emitted());
                return Ok(());
            }
        }
        for (events, end) in batches {
            let n = events.len() as u64;
            let token = self.shared.token(entry, end);
            self.metrics.events_in.add(n);
            let out = Arc::clone(&self.out);
            let shutdown = self.shutdown.clone();
            self.handle.block_on(async move {
                tokio::select! {
                    r = out.send_acked(events, token) => r,
                    _ = shutdown.cancelled() => Err(Closed),
                }
            })?;
            self.metrics.events_out.add(n);
        }
        Ok(())
    }

    /// Reader `i`'s file was truncated: what it read is emitted, its content
    /// generation becomes an orphan (for a copy), and it restarts at 0.
    fn truncated(&mut self, i: usize) -> Result<(), Closed> {
        self.c_truncations.inc();
        self.readers[i].flush_complete(&self.cfg.settings, &self.counters);
        self.send_batches(i)?;
        let r = &mut self.readers[i];
        tracing::info!(source = %self.id, path = %r.path.display(), at = r.emitted(), "file truncated; reading it again from the start");
        let new_entry = {
            let mut reg = self.shared.reg.lock();
            if let Some(e) = reg.get_mut(r.entry) {
                // A copy of the old content continues after its last emitted line.
                e.read_pos = r.emitted();
                e.set_prefix(&r.prefix);
            }
            reg.orphan(r.entry);
            let id = reg.create(r.path.to_string_lossy().into_owned(), r.key, 0);
            if let Some(e) = reg.get_mut(id) {
                e.live = true;
            }
            id
        };
        r.restart(new_entry);
        Ok(())
    }

    fn close(&mut self, i: usize, deleted: bool) {
        let r = self.readers.swap_remove(i);
        self.c_closed.inc();
        tracing::debug!(source = %self.id, path = %r.path.display(), deleted, "file closed");
        let mut reg = self.shared.reg.lock();
        let emitted = r.emitted();
        reg.consumed(r.entry, emitted);
        if let Some(e) = reg.get_mut(r.entry) {
            e.live = false;
            e.deleted = deleted;
            e.set_prefix(&r.prefix);
        }
    }

    fn problem(&mut self, path: &Path, p: Problem, error: &dyn std::fmt::Display) {
        if self.problems.get(path) == Some(&p) {
            return;
        }
        self.problems.insert(path.to_path_buf(), p);
        match p {
            Problem::NotRegular => {
                self.c_not_regular.inc();
                tracing::warn!(source = %self.id, path = %path.display(), "not a regular file (a directory?); skipped");
            }
            Problem::PermissionDenied => {
                self.c_denied.inc();
                tracing::warn!(source = %self.id, path = %path.display(), error = %error, "permission denied; skipped until readable");
            }
            Problem::Other => {
                self.c_open_errors.inc();
                tracing::warn!(source = %self.id, path = %path.display(), error = %error, "cannot open; skipped");
            }
        }
    }

    fn excluded(&self, path: &Path) -> bool {
        self.cfg.exclude.iter().any(|(pat, whole)| {
            if *whole {
                pat.matches_path(path)
            } else {
                path.file_name().is_some_and(|n| pat.matches(&n.to_string_lossy()))
            }
        })
    }

    /// Finds files matching the globs and opens the ones not being read.
    fn scan(&mut self) {
        let mut paths = Vec::new();
        let include = self.cfg.include.clone();
        for pattern in &include {
            let entries = match glob::glob(pattern) {
                Ok(g) => g,
                Err(e) => {
                    tracing::error!(source = %self.id, pattern, error = %e, "invalid glob");
                    continue;
                }
            };
            for entry in entries {
                match entry {
                    Ok(p) => paths.push(p),
                    Err(e) => {
                        let kind = if e.error().kind() == std::io::ErrorKind::PermissionDenied {
                            Problem::PermissionDenied
                        } else {
                            Problem::Other
                        };
                        let path = e.path().to_path_buf();
                        let msg = e.error().to_string();
                        self.problem(&path, kind, &msg);
                    }
                }
            }
        }
        let mut seen: HashSet<(u64, u64)> = HashSet::new();
        let mut ok_paths: HashSet<PathBuf> = HashSet::new();
        for path in paths {
            if self.excluded(&path) {
                continue;
            }
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(e) => {
                    // Vanished between the glob and the stat: nothing to report.
                    if e.kind() != std::io::ErrorKind::NotFound {
                        let kind = if e.kind() == std::io::ErrorKind::PermissionDenied {
                            Problem::PermissionDenied
                        } else {
                            Problem::Other
                        };
                        self.problem(&path, kind, &e);
                    }
                    continue;
                }
            };
            if !meta.is_file() {
                self.problem(&path, Problem::NotRegular, &"not a regular file");
                continue;
            }
            let key = (meta.dev(), meta.ino());
            if !seen.insert(key) {
                continue;
            }
            if self.readers.iter().any(|r| r.key == key) {
                ok_paths.insert(path);
                continue;
            }
            if self.consider(&path, key, meta.len()) {
                ok_paths.insert(path);
            }
        }
        self.problems.retain(|p, _| !ok_paths.contains(p) && p.exists());
        {
            let mut reg = self.shared.reg.lock();
            let forget = i64::try_from(self.cfg.forget_after.as_secs()).unwrap_or(i64::MAX);
            reg.prune(forget, &seen);
        }
        self.first_scan = false;
    }

    /// A file no reader has open: resume it, follow it as a copy, start it,
    /// or leave it for later. Returns false when it could not be opened.
    fn consider(&mut self, path: &Path, key: (u64, u64), size: u64) -> bool {
        if size == 0 {
            return true; // nothing to read, and nothing to fingerprint yet
        }
        // A known file that did not change needs no descriptor.
        let idle = {
            let reg = self.shared.reg.lock();
            reg.find_idle_by_key(key).and_then(|id| reg.get(id)).map(|e| (e.read_pos, e.acked))
        };
        if let Some((read_pos, _)) = idle {
            if read_pos == size {
                return true;
            }
        }
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) => {
                let kind = if e.kind() == std::io::ErrorKind::PermissionDenied {
                    Problem::PermissionDenied
                } else {
                    Problem::Other
                };
                self.problem(path, kind, &e);
                return false;
            }
        };
        let mut prefix = vec![0u8; (size as usize).min(FINGERPRINT_BYTES)];
        match read_full_at(&file, &mut prefix, 0) {
            Ok(n) => prefix.truncate(n),
            Err(e) => {
                self.problem(path, Problem::Other, &e);
                return false;
            }
        }
        if prefix.is_empty() {
            return true;
        }
        let path_str = path.to_string_lossy().into_owned();
        let mut reg = self.shared.reg.lock();
        // 1. The same inode, known.
        if let Some(id) = reg.find_idle_by_key(key) {
            let same = reg.get(id).is_some_and(|e| e.same_content(&prefix, false));
            if same {
                let start = reg.get(id).map_or(0, |e| e.read_pos);
                if start <= size {
                    if let Some(e) = reg.get_mut(id) {
                        e.live = true;
                        e.path = path_str;
                        e.set_prefix(&prefix);
                    }
                    drop(reg);
                    self.open(id, key, path, file, start, prefix);
                    return true;
                }
                self.c_truncations.inc();
            }
            // Rewritten (copytruncate while stopped) or inode reused: the old
            // content stays known for a copy of it.
            reg.orphan(id);
        }
        // 2. A copy of content known under another inode.
        match reg.find_copy_source(key, &prefix) {
            Some((_, true)) => {
                // The original is still being read and was not truncated: its
                // lines arrive through it.
                tracing::debug!(source = %self.id, path = %path.display(), "copy of a file being read; not read");
                return true;
            }
            Some((id, false)) => {
                let start = reg.get(id).map_or(0, |e| e.read_pos).min(size);
                if let Some(e) = reg.get_mut(id) {
                    e.key = key;
                    e.path = path_str;
                    e.orphan = false;
                    e.deleted = false;
                    e.live = true;
                }
                drop(reg);
                self.c_copies.inc();
                tracing::info!(source = %self.id, path = %path.display(), from = start, "following a copy of a truncated file");
                self.open(id, key, path, file, start, prefix);
                return true;
            }
            None => {}
        }
        // 3. New.
        let start = if self.first_scan && self.first_run && self.cfg.start_at == StartAt::End {
            last_line_end(&file, size)
        } else {
            0
        };
        let id = reg.create(path_str, key, start);
        if let Some(e) = reg.get_mut(id) {
            e.live = true;
            e.set_prefix(&prefix);
        }
        drop(reg);
        self.open(id, key, path, file, start, prefix);
        true
    }

    fn open(&mut self, entry: u64, key: (u64, u64), path: &Path, file: File, start: u64, prefix: Vec<u8>) {
        self.c_opened.inc();
        tracing::debug!(source = %self.id, path = %path.display(), offset = start, "file opened");
        self.readers.push(Reader::new(entry, key, path.to_path_buf(), file, start, prefix));
    }
}

/// The offset after the last newline of a file of `size` bytes (looking at
/// most 1 MiB back; else `size`).
fn last_line_end(file: &File, size: u64) -> u64 {
    let look = size.min(1 << 20);
    let mut tail = vec![0u8; look as usize];
    match read_full_at(file, &mut tail, size - look) {
        Ok(n) if n == tail.len() => match memchr::memrchr(b'\n', &tail) {
            Some(i) => size - look + i as u64 + 1,
            None => size,
        },
        _ => size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::positions::registry;
    use crate::testkit::{output_context, AckCapture, Capture};
    use sluice_core::AckToken;
    use sluice_core::Event;
    use std::io::Write;

    /// A file source over a temp dir, writing into `out`.
    struct Run {
        task: tokio::task::JoinHandle<Result<(), BoxError>>,
        shutdown: CancellationToken,
        metrics: Arc<ComponentMetrics>,
    }

    fn start(data: &Path, body: &str, out: Arc<dyn Output>) -> Run {
        let mut bcx = BuildContext::for_test("source", "files");
        bcx.data_dir = data.to_path_buf();
        let full = format!("scan_interval = \"40ms\"\npoll_interval = \"20ms\"\n{body}");
        let src = (SPEC.build)(toml::from_str(&full).unwrap(), &bcx).unwrap();
        let (cx, shutdown, metrics) = output_context(out);
        Run { task: tokio::spawn(src.run(cx)), shutdown, metrics }
    }

    impl Run {
        async fn stop(self) -> Arc<ComponentMetrics> {
            self.shutdown.cancel();
            self.task.await.unwrap().unwrap();
            self.metrics
        }
    }

    fn registry_file(data: &Path) -> PathBuf {
        data.join("file_positions").join("test").join("files.json")
    }

    fn offsets(data: &Path) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = registry::load(&registry_file(data))
            .unwrap()
            .into_iter()
            .filter(|e| !e.orphan)
            .map(|e| (e.path, e.offset))
            .collect();
        v.sort();
        v
    }

    async fn wait_events(events: &parking_lot::Mutex<Vec<Event>>, n: usize) -> Vec<String> {
        for _ in 0..500 {
            if events.lock().len() >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Long enough for an extra (wrong) event to show up.
        tokio::time::sleep(Duration::from_millis(150)).await;
        events.lock().iter().map(|e| e.message().unwrap_or_default().to_string()).collect()
    }

    fn append(path: &Path, text: &str) {
        std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
    }

    fn lines(prefix: &str, range: std::ops::Range<usize>) -> String {
        range.map(|i| format!("{prefix} {i:06}\n")).collect()
    }

    async fn wait_until(what: &str, f: impl Fn() -> bool) {
        for _ in 0..500 {
            if f() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("timed out waiting for {what}");
    }

    #[tokio::test]
    async fn new_files_are_discovered_and_positions_resume_after_restart() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let data = dir.path().join("data");
        append(&logs.join("a.log"), &lines("a", 0..1000));
        append(&logs.join("skip.gz"), "not me\n");
        let body = format!(
            "include = [{:?}]\nexclude = [\"*.gz\"]\noffset_field = \"offset\"\nbatch_events = 100\n",
            logs.join("*").to_str().unwrap()
        );
        let cap = Arc::new(Capture::default());
        let run = start(&data, &body, cap.clone());
        assert_eq!(wait_events(&cap.events, 1000).await.len(), 1000);
        // A file created while running.
        append(&logs.join("b.log"), &lines("b", 0..500));
        append(&logs.join("a.log"), &lines("a", 1000..1010));
        let got = wait_events(&cap.events, 1510).await;
        assert_eq!(got.len(), 1510);
        assert!(got.iter().all(|m| !m.contains("not me")));
        {
            let ev = cap.events.lock();
            let e = ev.iter().find(|e| e.message() == Some("a 000001")).unwrap();
            assert_eq!(e.fields().get("offset").and_then(sluice_core::Value::as_u64), Some(9));
            assert_eq!(&*e.source, logs.join("a.log").to_str().unwrap());
        }
        let m = run.stop().await;
        assert_eq!(m.events_out.get(), 1510);
        assert_eq!(m.counter("files_opened").get(), 2);
        let a_len = std::fs::metadata(logs.join("a.log")).unwrap().len();
        let b_len = std::fs::metadata(logs.join("b.log")).unwrap().len();
        assert_eq!(
            offsets(&data),
            [
                (logs.join("a.log").to_string_lossy().into_owned(), a_len),
                (logs.join("b.log").to_string_lossy().into_owned(), b_len)
            ]
        );
        // Restart: nothing read again; only what is appended now.
        let cap = Arc::new(Capture::default());
        let run = start(&data, &body, cap.clone());
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(cap.events.lock().len(), 0);
        append(&logs.join("b.log"), &lines("b", 500..505));
        assert_eq!(wait_events(&cap.events, 5).await, lines("b", 500..505).lines().collect::<Vec<_>>());
        run.stop().await;
    }

    #[tokio::test]
    async fn positions_advance_only_over_contiguous_acknowledged_batches() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        let data = dir.path().join("data");
        append(&log, &lines("x", 0..50)); // 9 bytes a line
        let body = format!("include = [{:?}]\nbatch_events = 10\nread_buffer = \"4KiB\"\n", log.to_str().unwrap());
        let cap = Arc::new(AckCapture::default());
        let run = start(&data, &body, cap.clone());
        wait_until("5 batches", || cap.tokens.lock().len() == 5).await;
        let mut tokens: Vec<AckToken> = std::mem::take(&mut *cap.tokens.lock());
        let first = tokens.remove(0);
        // Batches 2..5 acknowledged, the first not yet: nothing may be saved.
        for t in tokens.drain(..) {
            t.delivered();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(offsets(&data).iter().all(|(_, o)| *o == 0), "{:?}", offsets(&data));
        first.delivered();
        wait_until("frontier at 450", || offsets(&data).first().map(|x| x.1) == Some(450)).await;
        // The next batch fails (dropped at shutdown of the next hop).
        append(&log, &lines("x", 50..60));
        wait_until("6th batch", || cap.tokens.lock().len() == 1).await;
        cap.tokens.lock().pop().unwrap().failed();
        append(&log, &lines("x", 60..70));
        wait_until("7th batch", || cap.tokens.lock().len() == 1).await;
        cap.tokens.lock().pop().unwrap().delivered();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let m = run.stop().await;
        assert_eq!(m.counter("ack_failures").get(), 1);
        assert_eq!(offsets(&data)[0].1, 450, "a failed batch pins the frontier");
        // Restart: the failed batch and everything after it are read again.
        let cap = Arc::new(Capture::default());
        let run = start(&data, &body, cap.clone());
        assert_eq!(wait_events(&cap.events, 20).await, lines("x", 50..70).lines().collect::<Vec<_>>());
        run.stop().await;
        assert_eq!(offsets(&data)[0].1, 630);
    }

    #[tokio::test]
    async fn start_at_end_applies_to_the_first_run_only() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let data = dir.path().join("data");
        append(&logs.join("old.log"), &format!("{}partial", lines("old", 0..100)));
        let body = format!("include = [{:?}]\nstart_at = \"end\"\n", logs.join("*.log").to_str().unwrap());
        let cap = Arc::new(Capture::default());
        let run = start(&data, &body, cap.clone());
        tokio::time::sleep(Duration::from_millis(150)).await;
        // The unfinished last line is completed after the start: it is new.
        append(&logs.join("old.log"), " line\n");
        append(&logs.join("new.log"), &lines("new", 0..3)); // created later: from its start
        let got = wait_events(&cap.events, 4).await;
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(sorted, ["new 000000", "new 000001", "new 000002", "partial line"]);
        run.stop().await;
        // Second run: positions exist, so a file found now is read whole.
        append(&logs.join("third.log"), &lines("third", 0..2));
        let cap = Arc::new(Capture::default());
        let run = start(&data, &body, cap.clone());
        assert_eq!(wait_events(&cap.events, 2).await, ["third 000000", "third 000001"]);
        run.stop().await;
    }

    #[tokio::test]
    async fn truncation_restarts_at_zero_and_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        append(&log, &lines("before", 0..100));
        let body = format!("include = [{:?}]\n", log.to_str().unwrap());
        let cap = Arc::new(Capture::default());
        let run = start(&dir.path().join("data"), &body, cap.clone());
        assert_eq!(wait_events(&cap.events, 100).await.len(), 100);
        std::fs::OpenOptions::new().write(true).open(&log).unwrap().set_len(0).unwrap();
        append(&log, &lines("after", 0..10));
        let got = wait_events(&cap.events, 110).await;
        assert_eq!(got[100..], lines("after", 0..10).lines().collect::<Vec<_>>()[..]);
        assert_eq!(got.len(), 110);
        // Truncated and rewritten past the old position between two looks:
        // caught by the fingerprint of the first bytes.
        let long: String = (0..200).map(|i| format!("rewritten {i:06} with a longer text\n")).collect();
        std::fs::write(&log, &long).unwrap();
        let got = wait_events(&cap.events, 310).await;
        assert_eq!(got.len(), 310);
        assert_eq!(got[110], "rewritten 000000 with a longer text");
        let m = run.stop().await;
        assert_eq!(m.counter("truncations").get(), 2);
    }

    #[tokio::test]
    async fn deleted_file_is_read_to_its_end_then_closed_and_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let data = dir.path().join("data");
        let log = logs.join("gone.log");
        append(&log, &lines("g", 0..100));
        let body = format!("include = [{:?}]\n", logs.join("*.log").to_str().unwrap());
        let cap = Arc::new(Capture::default());
        let run = start(&data, &body, cap.clone());
        assert_eq!(wait_events(&cap.events, 100).await.len(), 100);
        // Written and deleted at once: the open descriptor still reads it.
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::fs::remove_file(&log).unwrap();
        f.write_all(lines("g", 100..150).as_bytes()).unwrap();
        f.write_all(b"last line without newline").unwrap();
        drop(f);
        let got = wait_events(&cap.events, 151).await;
        assert_eq!(got.len(), 151);
        assert_eq!(got[150], "last line without newline");
        wait_until("closed", || run.metrics.counter("files_closed").get() == 1).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        run.stop().await;
        assert!(offsets(&data).is_empty(), "a deleted file's position is forgotten");
    }

    #[tokio::test]
    async fn rotation_by_rename_and_by_copytruncate_deliver_every_line_once() {
        let dir = tempfile::tempdir().unwrap();
        let ren = dir.path().join("ren");
        let cpt = dir.path().join("cpt");
        std::fs::create_dir_all(&ren).unwrap();
        std::fs::create_dir_all(&cpt).unwrap();
        let body = format!(
            "include = [{:?}, {:?}]\n",
            ren.join("app.log*").to_str().unwrap(),
            cpt.join("app.log*").to_str().unwrap()
        );
        let cap = Arc::new(Capture::default());
        let run = start(&dir.path().join("data"), &body, cap.clone());
        let mut n = 0;
        for round in 0..4 {
            append(&ren.join("app.log"), &lines("ren", n..n + 500));
            append(&cpt.join("app.log"), &lines("cpt", n..n + 500));
            n += 500;
            if round % 2 == 1 {
                // Let the reader get part-way, or not at all.
                tokio::time::sleep(Duration::from_millis(60)).await;
            }
            // logrotate's two ways.
            if ren.join("app.log.1").exists() {
                std::fs::rename(ren.join("app.log.1"), ren.join(format!("app.log.{}", round + 10))).unwrap();
            }
            std::fs::rename(ren.join("app.log"), ren.join("app.log.1")).unwrap();
            if cpt.join("app.log.1").exists() {
                std::fs::rename(cpt.join("app.log.1"), cpt.join(format!("app.log.{}", round + 10))).unwrap();
            }
            std::fs::copy(cpt.join("app.log"), cpt.join("app.log.1")).unwrap();
            std::fs::OpenOptions::new().write(true).open(cpt.join("app.log")).unwrap().set_len(0).unwrap();
        }
        append(&ren.join("app.log"), &lines("ren", n..n + 10));
        append(&cpt.join("app.log"), &lines("cpt", n..n + 10));
        let got = wait_events(&cap.events, 2 * (n + 10)).await;
        let mut want: Vec<String> =
            lines("ren", 0..n + 10).lines().chain(lines("cpt", 0..n + 10).lines()).map(String::from).collect();
        let mut sorted = got.clone();
        sorted.sort();
        want.sort();
        assert_eq!(sorted.len(), want.len(), "every line exactly once");
        assert_eq!(sorted, want);
        run.stop().await;
    }

    #[tokio::test]
    async fn java_stack_traces_are_joined_and_flushed_by_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("java.log");
        append(
            &log,
            "2024-05-01 10:00:00 INFO start\n\
             2024-05-01 10:00:01 ERROR failed\n\
             java.lang.IllegalStateException: boom\n\
             \tat a.B.c(B.java:1)\n\
             Caused by: java.io.IOException: disk\n\
             \t... 3 more\n\
             2024-05-01 10:00:02 WARN last\n\
             \tat still.Part(Of.java:9)\n",
        );
        let body = format!(
            "include = [{:?}]\n[multiline]\npattern = '^\\d{{4}}-\\d{{2}}-\\d{{2}} '\nnegate = true\nwhat = \"previous\"\ntimeout = \"200ms\"\n",
            log.to_str().unwrap()
        );
        let data = dir.path().join("data");
        let cap = Arc::new(Capture::default());
        let run = start(&data, &body, cap.clone());
        // The last event has no successor line: the timeout flushes it.
        let got = wait_events(&cap.events, 3).await;
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], "2024-05-01 10:00:00 INFO start");
        assert_eq!(
            got[1],
            "2024-05-01 10:00:01 ERROR failed\njava.lang.IllegalStateException: boom\n\tat a.B.c(B.java:1)\nCaused by: java.io.IOException: disk\n\t... 3 more"
        );
        assert_eq!(got[2], "2024-05-01 10:00:02 WARN last\n\tat still.Part(Of.java:9)");
        assert!(cap.events.lock()[1].has_tag("multiline"));
        run.stop().await;
        assert_eq!(offsets(&data)[0].1, std::fs::metadata(&log).unwrap().len());
    }

    #[tokio::test]
    async fn pending_multiline_lines_are_not_acknowledged_at_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("ml.log");
        append(&log, "head 1\n cont\nhead 2\n cont\n");
        let body = format!(
            "include = [{:?}]\n[multiline]\npattern = '^\\s'\nwhat = \"previous\"\ntimeout = \"1h\"\n",
            log.to_str().unwrap()
        );
        let data = dir.path().join("data");
        let cap = Arc::new(Capture::default());
        let run = start(&data, &body, cap.clone());
        assert_eq!(wait_events(&cap.events, 1).await, ["head 1\n cont"]);
        run.stop().await;
        assert_eq!(offsets(&data)[0].1, 13, "the second event is still being assembled");
        append(&log, "head 3\n");
        let cap = Arc::new(Capture::default());
        let run = start(&data, &body, cap.clone());
        assert_eq!(wait_events(&cap.events, 1).await, ["head 2\n cont"]);
        run.stop().await;
    }

    #[tokio::test]
    async fn a_directory_or_unreadable_path_is_counted_and_the_rest_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(logs.join("dir.log")).unwrap();
        append(&logs.join("ok.log"), &lines("ok", 0..10));
        append(&logs.join("bin.log"), "\u{0}\u{1}\u{2}binary\n");
        std::fs::write(logs.join("bin2.log"), b"\xff\xfe\x00\x80 raw \xc3\n").unwrap();
        let body = format!("include = [{:?}]\n", logs.join("*.log").to_str().unwrap());
        let cap = Arc::new(Capture::default());
        let run = start(&dir.path().join("data"), &body, cap.clone());
        let got = wait_events(&cap.events, 12).await;
        assert_eq!(got.len(), 12);
        assert!(got.contains(&"\u{fffd}\u{fffd}\u{0}\u{fffd} raw \u{fffd}".to_string()), "{got:?}");
        tokio::time::sleep(Duration::from_millis(150)).await; // several scans
        let m = run.stop().await;
        assert_eq!(m.counter("not_regular_files").get(), 1, "reported once, not per scan");
        assert_eq!(m.counter("invalid_utf8_lines").get(), 1);
    }

    #[test]
    fn config_errors_name_their_key() {
        let bcx = BuildContext::for_test("source", "f");
        let err = |body: &str| match (SPEC.build)(toml::from_str(body).unwrap(), &bcx) {
            Ok(_) => panic!("{body} should not build"),
            Err(e) => e.to_string(),
        };
        assert!(err("include = []").contains("include"));
        assert!(err("include = [\"[\"]").contains("include[0]"));
        assert!(err("include = [\"a\"]\nencoding = \"utf-16\"").contains("encoding"));
        assert!(err("include = [\"a\"]\nmax_line_bytes = 0").contains("max_line_bytes"));
        assert!(
            err("include = [\"a\"]\n[multiline]\npattern = \"(\"\nwhat = \"previous\"").contains("multiline.pattern")
        );
        assert!(err("include = [\"a\"]\nlong_lines = \"wrap\"").contains("long_lines"));
        assert!(err("include = [\"a\"]\nbogus = 1").contains("bogus"));
    }
}
