//! Tests of the `file` component.

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
    assert!(err("include = [\"a\"]\n[multiline]\npattern = \"(\"\nwhat = \"previous\"").contains("multiline.pattern"));
    assert!(err("include = [\"a\"]\nlong_lines = \"wrap\"").contains("long_lines"));
    assert!(err("include = [\"a\"]\nbogus = 1").contains("bogus"));
}
