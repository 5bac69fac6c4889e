//! Allocator settings per role: the agent's, with mimalloc told to give
//! freed memory back to the OS (docs/adr/0011-agent-memory.md), the
//! store's and the processor's.
//!
//! With its defaults, mimalloc commits its first arena eagerly (on Linux,
//! where memory is overcommitted) and purges freed pages only after a delay,
//! so an agent shipping 20,000 lines/s held 60–80 MB of anonymous memory for
//! a live heap of a few MB. `MIMALLOC_ARENA_EAGER_COMMIT=0` and
//! `MIMALLOC_PURGE_DELAY=0` bring that to the live heap (docs/benchmarks/journal.md,
//! "Agent resources while shipping files"). mimalloc reads these options
//! when it reserves its first arena, which happens at the process's first
//! allocation, before `main`: setting them from inside the process (with
//! `mi_option_set`) comes too late. So `sluice agent` re-executes itself
//! once (`/proc/self/exe`, same pid, arguments and descriptors) with the
//! ones missing from its environment (a variable the user set is kept as
//! given), unless `SLUICE_LEAN_ALLOCATOR` is set (`0` opts out: mimalloc's
//! defaults, ≈ 20 % less CPU per event and 3–4× the memory). The dispatcher
//! keeps mimalloc's defaults (throughput).
//!
//! A node whose config has a `store` sink goes the other way ([`STORE`],
//! ADR 0005, revisions 2026-11-23 b and 2026-11-26): `MIMALLOC_PURGE_DELAY=10000`
//! (10 s), so the pages tantivy's indexer frees at every segment flush are
//! reused instead of returned and zeroed again by the kernel on the next
//! fault (≈ 12 % of the store's CPU in `clear_page_erms` with mimalloc's
//! 10 ms): ≈ +15–25 % events per CPU-second. It was `-1` (never return
//! memory), measured no faster, and a node then kept the memory of a
//! connection storm for ever. `SLUICE_STORE_ALLOCATOR=0` opts out.
//!
//! Any other node (`sluice run` without a `store` sink: a processor) runs
//! with [`PROCESSOR`]: `MIMALLOC_ALLOW_THP=0`, no transparent huge pages.
//! mimalloc otherwise asks the kernel for 2 MiB pages on its arena, and every
//! 2 MiB range a thread touches is then resident whole: the Apache grok
//! case peaked at 79–107 MB instead of 58–65 MB, for 5–10 % fewer events per
//! CPU-second without THP (fewer TLB misses; issue #23, journal 2026-11-27).
//! `SLUICE_PROCESSOR_ALLOCATOR=0` opts out (the throughput of huge pages).
//!
//! Whatever the profile, a runtime thread that goes idle gives its freed
//! memory back ([`collect_when_idle`], issue #18): mimalloc purges only when
//! the thread that owns the pages allocates or frees again, which an idle
//! thread does not.

/// The environment `sluice agent` runs with.
pub const SETTINGS: &[(&str, &str)] = &[("MIMALLOC_ARENA_EAGER_COMMIT", "0"), ("MIMALLOC_PURGE_DELAY", "0")];

/// Set in the re-executed process (so it does not loop), or by a user to
/// opt out.
pub const MARK: &str = "SLUICE_LEAN_ALLOCATOR";

/// A set of allocator settings and the variable marking a process that runs
/// with them (set by the re-exec, or by a user: anything but `1` opts out).
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    /// Environment variables added when missing.
    pub settings: &'static [(&'static str, &'static str)],
    /// The mark variable.
    pub mark: &'static str,
}

/// The agent's profile: give memory back.
pub const AGENT: Profile = Profile { settings: SETTINGS, mark: MARK };

/// A node with a `store` sink: keep freed pages (no re-zeroing by the kernel).
pub const STORE: Profile = Profile { settings: &[("MIMALLOC_PURGE_DELAY", "10000")], mark: "SLUICE_STORE_ALLOCATOR" };

/// A node without a `store` sink: no transparent huge pages (memory at or
/// below Fluent Bit's on the same work, issue #23).
pub const PROCESSOR: Profile = Profile { settings: &[("MIMALLOC_ALLOW_THP", "0")], mark: "SLUICE_PROCESSOR_ALLOCATOR" };

/// Least time between two collections of one thread's heap by
/// [`collect_when_idle`].
pub const COLLECT_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

// The one foreign call of the project (`unsafe_code` is denied elsewhere):
// mimalloc's C API has no safe Rust wrapper for it (ADR 0005, 2026-11-26).
#[allow(unsafe_code)]
extern "C" {
    /// mimalloc's `mi_collect`: frees the calling thread's empty pages and,
    /// with `force`, purges (returns to the OS) the freed memory its
    /// segments and the arenas hold, without waiting for the purge delay.
    fn mi_collect(force: bool);
}

/// For `tokio::runtime::Builder::on_thread_park`: when a runtime thread
/// goes idle, and its heap was not collected in the last [`COLLECT_EVERY`],
/// its freed memory goes back to the OS (twice: the first pass frees empty
/// pages, which schedules their purge; the second purges them). A busy
/// node parks its threads often: this costs one clock read per park and a
/// heap walk at most every 5 s per thread.
#[allow(unsafe_code)]
pub fn collect_when_idle() {
    use std::cell::Cell;
    use std::time::Instant;
    thread_local!(static LAST: Cell<Option<Instant>> = const { Cell::new(None) });
    let now = Instant::now();
    let due = LAST.with(|l| match l.get() {
        Some(t) if now.duration_since(t) < COLLECT_EVERY => false,
        _ => {
            l.set(Some(now));
            true
        }
    });
    if due {
        // SAFETY: `mi_collect` only walks and frees the calling thread's own
        // heap and the process-wide arenas under mimalloc's own locks; the
        // global allocator is mimalloc (main.rs), so it owns every page.
        unsafe {
            mi_collect(true);
            mi_collect(true);
        }
    }
}

/// What [`ensure_profile`] found, when it returns (the re-exec does not).
#[derive(Debug)]
pub enum Outcome {
    /// This process runs with [`SETTINGS`] (re-executed), or with the user's
    /// values of them.
    Lean,
    /// The user opted out with [`MARK`] (not `1`): mimalloc's defaults.
    UserChoice,
    /// The re-exec failed (no `/proc`?): mimalloc's defaults, more memory.
    Failed(std::io::Error),
}

/// Names the re-executed process after its `argv[0]` again: executing
/// `/proc/self/exe` named it `exe` (what `ps`, `top` and `pgrep` show).
/// Best effort: `/proc/self/comm` takes at most 15 bytes.
pub fn restore_name() {
    let Some(argv0) = std::env::args_os().next() else { return };
    let path = std::path::PathBuf::from(argv0);
    let Some(base) = path.file_name() else { return };
    let bytes = base.as_encoded_bytes();
    let _ = std::fs::write("/proc/self/comm", &bytes[..bytes.len().min(15)]);
}

/// Makes this process run with a profile's settings: returns at once if it
/// already does or the user opted out, else replaces the process image with
/// itself and never returns — except on error. A variable the user set is
/// kept as given; only the missing ones are added. [`Outcome::Lean`] means
/// "runs with the profile's settings".
pub fn ensure_profile(profile: Profile) -> Outcome {
    match std::env::var_os(profile.mark) {
        Some(v) if v == "1" => return Outcome::Lean,
        Some(_) => return Outcome::UserChoice,
        None => {}
    }
    let missing: Vec<(&str, &str)> =
        profile.settings.iter().copied().filter(|(k, _)| std::env::var_os(k).is_none()).collect();
    if missing.is_empty() {
        return Outcome::Lean;
    }
    reexec(profile.mark, &missing)
}

#[cfg(target_os = "linux")]
fn reexec(mark: &str, missing: &[(&str, &str)]) -> Outcome {
    use std::os::unix::process::CommandExt as _;
    let mut args = std::env::args_os();
    let mut cmd = std::process::Command::new("/proc/self/exe");
    if let Some(argv0) = args.next() {
        cmd.arg0(argv0);
    }
    cmd.args(args).env(mark, "1");
    for (k, v) in missing {
        cmd.env(k, v);
    }
    // `exec` returns only when it failed.
    Outcome::Failed(cmd.exec())
}

#[cfg(not(target_os = "linux"))]
fn reexec(_mark: &str, _missing: &[(&str, &str)]) -> Outcome {
    Outcome::Failed(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "re-exec with allocator settings is Linux-only",
    ))
}
