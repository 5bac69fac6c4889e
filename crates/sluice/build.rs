//! Links the binary with packed relative relocations (`DT_RELR`,
//! `-z pack-relative-relocs`) where the toolchain and the C library support
//! them: the 2 MB `.rela.dyn` table that the dynamic loader reads at every
//! start becomes a 33 KB `.relr.dyn`, 3 MB less resident memory for every
//! process — the agent runs on every host (docs/adr/0011-agent-memory.md).
//!
//! A `DT_RELR` binary needs glibc ≥ 2.36 where it runs. So the flag is used
//! only for Linux GNU targets when not cross-compiling, and only if a probe
//! program linked with it runs here (binutils ≥ 2.38 and glibc ≥ 2.36 on the
//! build host — the same host-or-newer rule that glibc symbol versions
//! already impose). `SLUICE_NO_RELR=1` turns it off (a build on a new
//! distribution for older hosts).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SLUICE_NO_RELR");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("SLUICE_NO_RELR") == "1"
        || var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("HOST") != var("TARGET")
    {
        return;
    }
    if probe() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    } else {
        println!("cargo:warning=linking without -z pack-relative-relocs (no support in this toolchain or C library)");
    }
}

/// Links and runs a tiny C program with the flag.
fn probe() -> bool {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let src = out.join("relr_probe.c");
    let exe = out.join("relr_probe");
    // A pointer in initialised data: one relative relocation in a PIE.
    if std::fs::write(&src, "static int x; int *p = &x; int main(void) { return *p; }\n").is_err() {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let linked = Command::new(cc)
        .args(["-pie", "-fPIE", "-Wl,-z,pack-relative-relocs", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .is_ok_and(|o| o.status.success());
    linked && Command::new(&exe).status().is_ok_and(|s| s.success())
}
