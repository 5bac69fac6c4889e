//! Every configuration under `examples/` is one a user copies first, so each
//! must pass `sluice validate` as shipped (and a broken copy must not).

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn examples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

/// A scratch working directory: the examples use relative data dirs.
struct Cwd(PathBuf);
impl Cwd {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("sluice-examples-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Cwd(d)
    }
}
impl Drop for Cwd {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn every_example_validates() {
    let files = examples();
    assert!(files.len() >= 3, "examples/ has {} configs", files.len());
    let cwd = Cwd::new("all");
    // The agent example reads the token the processor example creates on its
    // first start; without it validation says so (next test).
    std::fs::create_dir_all(cwd.0.join("data-processor")).unwrap();
    std::fs::write(cwd.0.join("data-processor/agent.token"), "0123456789abcdef0123456789abcdef\n").unwrap();
    // The dispatcher example reads the relay token the processor example creates.
    std::fs::write(cwd.0.join("data-processor/relay.token"), "fedcba9876543210fedcba9876543210\n").unwrap();
    let before = tree(&cwd.0);
    for f in &files {
        let out = Command::new(BIN).current_dir(&cwd.0).arg("validate").arg(f).output().unwrap();
        assert!(
            out.status.success(),
            "{} does not validate:\n{}{}",
            f.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // Issue #18: validation writes nothing (no data directory, token or store).
        assert_eq!(tree(&cwd.0), before, "`sluice validate {}` wrote into its working directory", f.display());
    }
}

/// Every path under `dir` (relative, sorted), with its kind.
fn tree(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if p.is_dir() {
                out.push(format!("{rel}/"));
                stack.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// Issue #18: `sluice validate` in an empty directory leaves it empty — the
/// single-node example names a data directory, an agent token it creates on
/// first start and a store, none of which validation may create.
#[test]
fn issue_18_validate_in_an_empty_directory_leaves_it_empty() {
    let f = examples().into_iter().find(|p| p.ends_with("single-node.toml")).unwrap();
    let cwd = Cwd::new("empty");
    let out = Command::new(BIN).current_dir(&cwd.0).arg("validate").arg(&f).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tree(&cwd.0), Vec::<String>::new());
}

#[test]
fn a_broken_example_is_refused_with_its_keys() {
    let f = examples().into_iter().find(|p| p.ends_with("agent.toml")).unwrap();
    let text =
        std::fs::read_to_string(&f).unwrap().replace("type = \"file\"", "type = \"file\"\nfollow_symlinks = true");
    let cwd = Cwd::new("broken");
    let bad = cwd.0.join("agent.toml");
    std::fs::write(&bad, text).unwrap();
    let out = Command::new(BIN).current_dir(&cwd.0).arg("validate").arg(&bad).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{all}");
    // Both errors, each under its key: the unknown key and the missing token.
    assert!(all.contains("pipelines.ship.sources.files.follow_symlinks"), "{all}");
    assert!(
        all.contains("pipelines.ship.sinks.processors.token_file: cannot read data-processor/agent.token"),
        "{all}"
    );
}
