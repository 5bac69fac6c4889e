#!/usr/bin/env bash
# Fuzzes every target in fuzz/ for N seconds each (default 15) with cargo-fuzz
# on the nightly toolchain. Installs cargo-fuzz into .cache/cargo-fuzz if missing.
# Each target starts from its committed seeds (fuzz/seeds/<target>/: test
# vectors, loghub lines, the thesis event, agent-protocol frames; see
# fuzz/seeds/README.md), copied into the working corpus fuzz/corpus/<target>/
# (not committed; it keeps what earlier runs found). A target without seeds fails.
# Fails when `cargo fuzz list` fails, lists no target, or lists fewer targets
# than fuzz/fuzz_targets/ holds; prints how many ran and fails unless all did.
#   scripts/fuzz.sh build           only install what it needs and build the
#                                   targets (check.sh runs this in the
#                                   background, at the lowest priority, while
#                                   the test binaries wait on services)
#   SLUICE_FUZZ_SANITIZER=address   build with AddressSanitizer (default: none)
#
# No sanitizer by default: every workspace crate denies `unsafe_code`
# (Cargo.toml), so AddressSanitizer watches only the dependencies' unsafe
# code, which their own projects fuzz. Without it the build took 208 s
# against 321 s cold, and the grok target ran 1,864 inputs/s against 642
# (2026-11-29, docs/adr/0123): three times the inputs in the same seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=run
if [ "${1:-}" = build ]; then
  mode=build
  shift
fi
secs=${1:-15}
san=${SLUICE_FUZZ_SANITIZER:-none}
root=$(pwd)
# A build directory of its own: cargo locks a build directory for the
# whole of a build, and this one runs while `cargo test` uses the
# workspace's (scripts/check.sh); `cargo install` below
# builds there too.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}/fuzz"
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
fuzz_bin="$root/.cache/cargo-fuzz/bin"
if [ ! -x "$fuzz_bin/cargo-fuzz" ]; then
  cargo install cargo-fuzz --locked --root "$root/.cache/cargo-fuzz"
fi
export PATH="$fuzz_bin:$PATH"
cd fuzz
# Not `for t in $(cargo fuzz list)`: a failing list would leave the loop
# empty and the step green.
if ! targets=$(cargo +nightly fuzz list); then
  echo "fuzz: 'cargo +nightly fuzz list' failed" >&2
  exit 1
fi
listed=$(printf '%s\n' "$targets" | grep -c . || true)
files=$(find fuzz_targets -maxdepth 1 -name '*.rs' | wc -l)
if [ "$listed" -eq 0 ] || [ "$listed" -ne "$files" ]; then
  echo "fuzz: cargo fuzz list gives $listed targets, fuzz/fuzz_targets holds $files" >&2
  exit 1
fi
mkdir -p "$root/.cache/fuzz"
for t in $targets; do
  seeds="seeds/$t"
  if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
    echo "fuzz: no seeds for $t in fuzz/$seeds" >&2
    exit 1
  fi
  mkdir -p "corpus/$t"
  cp "$seeds"/* "corpus/$t/"
  rm -f "$root/.cache/fuzz/$t.rc"
done
# Every target built once, with both cores; `cargo fuzz run` below then
# finds them built. The runs are independent: as many at a time as the
# machine has cores (2 here; 18 targets one after the other took ≈ 3 min of
# a CI run's wall time).
cargo +nightly fuzz build -s "$san"
if [ "$mode" = build ]; then
  echo "fuzz: $listed targets built"
  exit 0
fi
export secs root san
fuzz_one() {
  local t=$1 log="$root/.cache/fuzz/$1.log" rc=0
  cargo +nightly fuzz run -s "$san" "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 >"$log" 2>&1 || rc=$?
  echo "$rc" >"$root/.cache/fuzz/$t.rc"
}
export -f fuzz_one
printf '%s\n' $targets | xargs -P "$(nproc)" -I{} bash -c 'fuzz_one "$1"' _ {}
ran=0
failed=0
for t in $targets; do
  log="$root/.cache/fuzz/$t.log"
  echo "--- fuzz $t for ${secs}s from $(ls "seeds/$t" | wc -l) seeds ($(ls "corpus/$t" | wc -l) in the corpus now)"
  rc=$(cat "$root/.cache/fuzz/$t.rc" 2>/dev/null || echo missing)
  if [ "$rc" != 0 ]; then
    tail -n 40 "$log"
    echo "fuzz: $t failed (exit $rc, log: $log)" >&2
    failed=1
    continue
  fi
  tail -n 3 "$log"
  ran=$((ran + 1))
done
echo "fuzz: $ran of $listed targets ran for ${secs}s each"
[ "$failed" = 0 ] && [ "$ran" -eq "$listed" ]
