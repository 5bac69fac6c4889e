#!/usr/bin/env bash
# Fuzzes every target in fuzz/ for N seconds each (default 15) with cargo-fuzz
# on the nightly toolchain. Installs cargo-fuzz into .cache/cargo-fuzz if missing.
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
for t in $(cargo +nightly fuzz list); do
  echo "--- fuzz $t for ${secs}s"
  mkdir -p "corpus/$t"
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 2>&1 | tail -n 3
done
