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
//! - **Positions** ([`crate::positions::registry`], `docs/specs/file-positions.md`): under
//!   `<data_dir>/file_positions/<pipeline>/<id>.json`, advanced only when a
//!   batch's [`AckToken`](sluice_core::AckToken) is delivered ([`Output::send_acked`]), over the
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
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration, Positive};
use sluice_core::metrics::{ComponentMetrics, Counter};
use tokio_util::sync::CancellationToken;

use self::multiline::{Joiner, MultilineConfig};
use self::reader::{read_full_at, Counters, Reader, Settings, Step};
use crate::globs;
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
    #[serde(default = "crate::defaults::secs::<1>")]
    scan_interval: Positive<HumanDuration>,
    /// How long the reader sleeps when no file had new data (default 250ms).
    #[serde(default = "crate::defaults::millis::<250>")]
    poll_interval: Positive<HumanDuration>,
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
    #[serde(default = "crate::defaults::count::<1024>")]
    batch_events: Positive<usize>,
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
    globs::compile_required(cx, "include", &c.include)?;
    let exclude: Vec<_> = globs::compile(cx, "exclude", &c.exclude)?
        .into_iter()
        .zip(&c.exclude)
        .map(|(pat, p)| (pat, p.contains('/')))
        .collect();
    if c.max_line_bytes.0 == 0 || c.max_line_bytes.0 > (1 << 30) {
        return Err(cx.error("max_line_bytes", "must be between 1 byte and 1GiB"));
    }
    if c.read_buffer.0 < 4096 || c.read_buffer.0 > (64 << 20) {
        return Err(cx.error("read_buffer", "must be between 4KiB and 64MiB"));
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
            batch_events: c.batch_events.get(),
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
mod tests;
