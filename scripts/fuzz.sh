#!/usr/bin/env bash
# Fuzzes every target in fuzz/ for N seconds each (default 15) with cargo-fuzz
# on the nightly toolchain. Installs cargo-fuzz into .cache/cargo-fuzz if missing.
# Each target starts from its committed seeds (fuzz/seeds/<target>/: test
# vectors, loghub lines, the thesis event, agent-protocol frames; see
# fuzz/seeds/README.md), copied into the working corpus fuzz/corpus/<target>/
# (not committed; it keeps what earlier runs found). A target without seeds fails.
# Fails when `cargo fuzz list` fails, lists no target, or lists fewer targets
# than fuzz/fuzz_targets/ holds; prints how many ran and fails unless all did.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-15}
root=$(pwd)
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
ran=0
for t in $targets; do
  seeds="seeds/$t"
  if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
    echo "fuzz: no seeds for $t in fuzz/$seeds" >&2
    exit 1
  fi
  mkdir -p "corpus/$t"
  cp "$seeds"/* "corpus/$t/"
  echo "--- fuzz $t for ${secs}s from $(ls "$seeds" | wc -l) seeds ($(ls "corpus/$t" | wc -l) in the corpus)"
  log="$root/.cache/fuzz/$t.log"
  if ! cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 > "$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz: $t failed (log: $log)" >&2
    exit 1
  fi
  tail -n 3 "$log"
  ran=$((ran + 1))
done
echo "fuzz: $ran of $listed targets ran for ${secs}s each"
[ "$ran" -eq "$listed" ]
