//! The one way a test gives up when this machine lacks what it needs (root,
//! network namespaces, a service such as OpenSearch or rsyslog, or an opt-out
//! variable such as `SLUICE_SKIP_SYSLOG`), so a skip is never mistaken for a
//! pass:
//!
//! - under `CI=true` it fails the test: CI has every capability the suite
//!   needs, so a missing one is a broken CI machine, not a reason to pass;
//! - elsewhere it writes `SKIPPED (<kind>): <test>: <reason>` straight to the
//!   process's stderr, past libtest's output capture, and the caller returns.
//!   `scripts/check.sh` counts these lines, reports them beside the summary
//!   and refuses them under `CI=true`.
//!
//! Shared by the test binaries of several crates (`#[path]` includes it).
#![allow(dead_code)]

use std::io::Write;

/// Whether this run is CI's (`CI` set to anything but "", "0" or "false").
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"))
}

/// Gives up on `test` for want of `kind` (e.g. "capability", "service",
/// "opt-out"): panics under CI, otherwise prints the visible SKIPPED line.
/// The caller returns right after.
pub fn skip(kind: &str, test: &str, reason: &str) {
    assert!(!in_ci(), "{test}: {reason}; a test may not skip under CI=true (kind: {kind})");
    // `eprintln!` would be captured (and shown only on failure); the handle is not.
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED ({kind}): {test}: {reason}");
}
