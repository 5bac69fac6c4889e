//! `file`: appends events as ndjson to a file, rotating by size and/or age.
//!
//! A batch is acknowledged once its bytes were written to the OS (and synced
//! when `fsync = true`). A new file is created readable by its owner only
//! (0600): it holds every group's events. Rotation renames `path` to `path.<unix-ms>` and
//! starts a new file; `max_files` old files are kept.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::codec::write_json;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration};
use sluice_core::Event;
use tokio::fs::{File, OpenOptions};
use tokio::io::AsyncWriteExt;

/// Registry entry.
pub const SPEC: SinkSpec = SinkSpec {
    name: "file",
    summary: "ndjson to a file with size/time rotation",
    example: "path = \"/tmp/sluice-example.ndjson\"\nmax_bytes = \"100MiB\"\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// File to append to (created with its directories).
    path: PathBuf,
    /// Rotate when the file reaches this size.
    #[serde(default)]
    max_bytes: Option<ByteSize>,
    /// Rotate when the file is this old.
    #[serde(default)]
    max_age: Option<HumanDuration>,
    /// Rotated files to keep (oldest deleted first); 0 keeps all.
    #[serde(default)]
    max_files: usize,
    /// fdatasync after each batch.
    #[serde(default)]
    fsync: bool,
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    if c.path.as_os_str().is_empty() {
        return Err(cx.error("path", "must not be empty"));
    }
    Ok(Box::new(FileSink { c, file: None, size: 0, opened: Instant::now(), buf: Vec::new() }))
}

struct FileSink {
    c: Config,
    file: Option<File>,
    size: u64,
    opened: Instant,
    buf: Vec<u8>,
}

impl FileSink {
    async fn open(&mut self) -> Result<(), BoxError> {
        if let Some(dir) = self.c.path.parent() {
            if !dir.as_os_str().is_empty() {
                tokio::fs::create_dir_all(dir).await?;
            }
        }
        let path = self.c.path.clone();
        let torn = tokio::task::spawn_blocking(move || drop_torn_tail(&path))
            .await
            .map_err(|e| format!("open {}: {e}", self.c.path.display()))?
            .map_err(|e| format!("open {}: {e}", self.c.path.display()))?;
        if torn > 0 {
            tracing::warn!(path = %self.c.path.display(), bytes = torn, "file sink: dropped a line cut short by a crash (its batch was not acknowledged and is sent again)");
        }
        let f = OpenOptions::new()
            .mode(0o600)
            .create(true)
            .append(true)
            .open(&self.c.path)
            .await
            .map_err(|e| format!("open {}: {e}", self.c.path.display()))?;
        self.size = f.metadata().await?.len();
        self.opened = Instant::now();
        self.file = Some(f);
        Ok(())
    }

    fn due(&self, incoming: u64) -> bool {
        let by_size = self.c.max_bytes.is_some_and(|m| self.size > 0 && self.size + incoming > m.0);
        let by_age = self.c.max_age.is_some_and(|a| self.opened.elapsed() >= a.0);
        by_size || by_age
    }

    async fn rotate(&mut self) -> Result<(), BoxError> {
        if let Some(mut f) = self.file.take() {
            f.flush().await?;
        }
        let ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_millis();
        let mut target = PathBuf::from(format!("{}.{ms}", self.c.path.display()));
        let mut n = 0;
        while tokio::fs::try_exists(&target).await.unwrap_or(false) {
            n += 1;
            target = PathBuf::from(format!("{}.{ms}-{n}", self.c.path.display()));
        }
        tokio::fs::rename(&self.c.path, &target).await?;
        if self.c.max_files > 0 {
            prune(&self.c.path, self.c.max_files).await?;
        }
        self.open().await
    }
}

/// Cuts off a last line with no newline: one cut short by a crash in the
/// middle of a write. Its batch was never acknowledged (a batch is
/// acknowledged after its last byte was written), so it is sent again; left
/// in place, the next line would run into it. Returns the bytes dropped.
fn drop_torn_tail(path: &Path) -> std::io::Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = match std::fs::OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let len = f.metadata()?.len();
    let mut buf = vec![0u8; 64 << 10];
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            let keep = start + i as u64 + 1;
            if keep < len {
                f.set_len(keep)?;
            }
            return Ok(len - keep);
        }
        end = start;
    }
    f.set_len(0)?;
    Ok(len)
}

async fn prune(path: &Path, keep: usize) -> Result<(), BoxError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return Ok(()) };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let prefix = format!("{}.", name.to_string_lossy());
    let mut rotated = Vec::new();
    let mut rd = tokio::fs::read_dir(dir).await?;
    while let Some(entry) = rd.next_entry().await? {
        let n = entry.file_name().to_string_lossy().into_owned();
        if n.starts_with(&prefix) {
            rotated.push(entry.path());
        }
    }
    rotated.sort();
    while rotated.len() > keep {
        let old = rotated.remove(0);
        tokio::fs::remove_file(&old).await?;
    }
    Ok(())
}

#[async_trait]
impl Sink for FileSink {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        self.buf.clear();
        for e in events {
            write_json(e, &mut self.buf);
            self.buf.push(b'\n');
        }
        if self.file.is_none() {
            self.open().await?;
        }
        if self.due(self.buf.len() as u64) {
            self.rotate().await?;
        }
        let Some(f) = self.file.as_mut() else { return Err("file not open".into()) };
        if let Err(e) = f.write_all(&self.buf).await {
            self.file = None; // reopen on retry
            return Err(format!("write {}: {e}", self.c.path.display()).into());
        }
        f.flush().await?;
        if self.c.fsync {
            f.sync_data().await?;
        }
        self.size += self.buf.len() as u64;
        Ok(())
    }

    async fn close(&mut self) -> Result<(), BoxError> {
        if let Some(f) = self.file.as_mut() {
            f.flush().await?;
            f.sync_data().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::build_sink;

    /// After a crash mid-write the file ends in part of a line; the sink
    /// cuts it off when it opens the file, so the next line starts clean.
    #[tokio::test]
    async fn a_line_cut_short_by_a_crash_is_dropped_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.ndjson");
        std::fs::write(&path, "{\"message\":\"a\"}\n{\"message\":\"b\"}\n{\"mess").unwrap();
        let mut s = build_sink(&SPEC, &format!("path = {:?}", path.display().to_string())).unwrap();
        s.write(&[Event::from_message("c")]).await.unwrap();
        s.close().await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let messages: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect(l)["message"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(messages, ["a", "b", "c"]);
        assert!(text.ends_with('\n'));
        // No newline at all: all of it is a cut line. Whole lines: untouched.
        std::fs::write(&path, "{\"mess").unwrap();
        assert_eq!(drop_torn_tail(&path).unwrap(), 6);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        std::fs::write(&path, "x\n").unwrap();
        assert_eq!(drop_torn_tail(&path).unwrap(), 0);
        assert_eq!(drop_torn_tail(&dir.path().join("missing")).unwrap(), 0);
        // A cut line longer than one read of the tail.
        let long = format!("whole\n{}", "y".repeat(200_000));
        std::fs::write(&path, &long).unwrap();
        assert_eq!(drop_torn_tail(&path).unwrap(), 200_000);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "whole\n");
    }

    #[tokio::test]
    async fn writes_and_rotates_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/events.ndjson");
        let mut s =
            build_sink(&SPEC, &format!("path = {:?}\nmax_bytes = 200\nmax_files = 2", path.display().to_string()))
                .unwrap();
        for i in 0..10 {
            s.write(&[Event::from_message(format!("event number {i:02} with some padding"))]).await.unwrap();
        }
        s.close().await.unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 3, "{names:?}"); // current + 2 kept
        let current = std::fs::read_to_string(&path).unwrap();
        assert!(current.contains("event number 09"), "{current}");
        assert!(current.lines().all(|l| l.starts_with("{\"@timestamp\":")));
    }
}
