//! The repository stands alone: nothing in it reads the team's `shared/`
//! folder beside the checkout or an absolute path on the development machine.
//! Tests, examples and benchmarks read `testdata/` (testdata/SOURCES.md).
//!
//! This walks every file of the checkout (tracked or not, build output and
//! installed packages excepted) and fails on a reference. The only file
//! allowed to name such paths is the dated lab journal, which records where
//! figures were measured at the time.

use std::path::{Path, PathBuf};

/// Directories that are build output or downloads, never sources.
const SKIP_DIRS: &[&str] = &[".git", "target", "node_modules", ".cache", "dist", "corpus", "artifacts"];

/// Files allowed to name outside paths, with the reason.
const ALLOWED: &[(&str, &str)] =
    &[("docs/benchmarks/journal.md", "historical record of the commands run on the team's machine")];

/// What counts as a reference outside the checkout. Spelled in pieces so
/// this file does not match itself.
fn forbidden() -> Vec<String> {
    vec![
        ["..", "/shared"].concat(),
        ["/work", "/shared"].concat(),
        ["shared", "/data/"].concat(),
        ["shared", "/recipes/"].concat(),
        ["/work", "/main"].concat(),
        ["/work", "/notes"].concat(),
        ["/work", "/targets"].concat(),
    ]
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.expect("directory entry");
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type().expect("file type");
        // In a git worktree `.git` is a file naming the main checkout's
        // git directory: git's, not the project's.
        if name == ".git" {
            continue;
        }
        if kind.is_dir() {
            if !SKIP_DIRS.contains(&name.as_ref()) {
                walk(&path, out);
            }
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// Every `(file, line number, line)` that names a forbidden path.
fn references(root: &Path) -> (usize, Vec<(String, usize, String)>) {
    let patterns = forbidden();
    let mut files = Vec::new();
    walk(root, &mut files);
    let mut scanned = 0;
    let mut hits = Vec::new();
    for path in files {
        let rel = path.strip_prefix(root).expect("under root").to_string_lossy().replace('\\', "/");
        if ALLOWED.iter().any(|(f, _)| *f == rel) {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else { continue };
        // Binary samples (evtx, databases) hold no paths worth checking.
        let Ok(text) = std::str::from_utf8(&bytes) else { continue };
        scanned += 1;
        for (i, line) in text.lines().enumerate() {
            if patterns.iter().any(|p| line.contains(p.as_str())) {
                hits.push((rel.clone(), i + 1, line.trim().chars().take(160).collect()));
            }
        }
    }
    (scanned, hits)
}

#[test]
fn repo_is_self_contained() {
    let root = repo_root();
    let (scanned, hits) = references(&root);
    // The walk must have seen the tree: a wrong root would pass vacuously.
    assert!(scanned > 300, "scanned only {scanned} text files under {}", root.display());
    let report: Vec<String> = hits.iter().map(|(f, n, l)| format!("  {f}:{n}: {l}")).collect();
    assert!(
        hits.is_empty(),
        "{} reference(s) to paths outside the checkout (copy the data into testdata/ and note it in \
         testdata/SOURCES.md):\n{}",
        hits.len(),
        report.join("\n")
    );
}

#[test]
fn the_check_finds_a_reference_when_one_is_added() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("crates/x/tests")).unwrap();
    std::fs::write(dir.path().join("crates/x/tests/ok.rs"), "const A: &str = \"testdata/loghub\";\n").unwrap();
    let bad = format!("let p = \"{}/data/loghub/Apache/Apache_2k.log\";\n", ["..", "/shared"].concat());
    std::fs::write(dir.path().join("crates/x/tests/bad.rs"), bad).unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    std::fs::write(dir.path().join("target/ignored.rs"), format!("{}/x", ["/work", "/shared"].concat())).unwrap();
    let (scanned, hits) = references(dir.path());
    assert_eq!(scanned, 2);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!((hits[0].0.as_str(), hits[0].1), ("crates/x/tests/bad.rs", 1));
}

/// Every file under `testdata/` is in git: an ignore rule (`*.log` caught the
/// loghub samples once) would leave a clone without the data its tests read.
#[test]
fn every_testdata_file_is_tracked() {
    let root = repo_root();
    if !root.join(".git").exists() {
        println!("SKIPPED (not a git checkout): every_testdata_file_is_tracked");
        return;
    }
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z", "testdata"])
        .current_dir(&root)
        .output()
        .expect("git ls-files");
    assert!(out.status.success(), "git ls-files failed: {}", String::from_utf8_lossy(&out.stderr));
    let tracked: std::collections::BTreeSet<String> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let mut files = Vec::new();
    walk(&root.join("testdata"), &mut files);
    let untracked: Vec<String> = files
        .iter()
        .map(|p| p.strip_prefix(&root).expect("under root").to_string_lossy().replace('\\', "/"))
        .filter(|p| !tracked.contains(p))
        .collect();
    assert!(files.len() > 10, "testdata holds only {} files", files.len());
    assert!(untracked.is_empty(), "files under testdata/ that git does not track (check .gitignore): {untracked:?}");
}
