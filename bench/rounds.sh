#!/usr/bin/env bash
# Alternated A/B rounds of bench/run.py cases, one line per run (BENCHMARKS.md).
#   bench/rounds.sh N LOG name=BIN[:VAR=VALUE] ...
#   CASES="passthrough-memory grok-apache" bench/rounds.sh 4 /tmp/ab.log main=/tmp/a after=/tmp/b
# For each round, for each binary, for each case (default: passthrough-memory,
# passthrough-persisted, grok-apache): the round, name, case, load average,
# events per sluice CPU-second, wall events/s, missing, CPU seconds, peak RSS MB.
set -euo pipefail
n=$1; log=$2; shift 2
cases=${CASES:-"passthrough-memory passthrough-persisted grok-apache"}
cd "$(dirname "$0")/.."
for r in $(seq 1 "$n"); do
  for spec in "$@"; do
    name=${spec%%=*}; rest=${spec#*=}; bin=${rest%%:*}; envs=""
    [[ "$rest" == *:* ]] && envs=${rest#*:}
    for c in $cases; do
      load=$(cut -d' ' -f1 /proc/loadavg)
      # shellcheck disable=SC2086
      out=$(env $envs SLUICE_BIN="$bin" python3 bench/run.py "$c" 2>/dev/null)
      echo "$r $name $c load=$load $(echo "$out" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["events_per_cpu_s"], d["events_per_s_wall"], "missing=%d"%d["missing"], "cpu=%s"%d["sluice_cpu_s"], "rss=%s"%d["peak_rss_mb"])')" | tee -a "$log"
    done
  done
done
