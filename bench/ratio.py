#!/usr/bin/env python3
"""Summary of bench/rounds.sh logs: per binary and case, events per sluice
CPU-second as min / median / max, and for each binary the persisted queue
against the memory queue of the same rounds (BENCHMARKS.md, "Persisted
queue"): the ratio of the medians, the median of the per-round ratios, and
the CPU the persisted queue adds per event (1/persisted - 1/memory, in ns),
which, unlike the ratio, does not move when the memory path gets faster.

usage: bench/ratio.py LOG [LOG...]
       bench/ratio.py --memory CASE --persisted CASE LOG...   (other case pair)
"""
import statistics
import sys
from collections import defaultdict


def parse(lines):
    """Rows (round, name, case, events per CPU-s) of rounds.sh lines."""
    rows = []
    for line in lines:
        parts = line.split()
        if len(parts) < 5 or not parts[4].isdigit():
            continue
        rows.append((parts[0], parts[1], parts[2], int(parts[4])))
    return rows


def summary(rows, memory, persisted):
    """One text line per binary name, in the order the log first names them."""
    per = defaultdict(list)
    by_round = {}
    names = []
    for rnd, name, case, eps in rows:
        if name not in names:
            names.append(name)
        per[(name, case)].append(eps)
        by_round[(rnd, name, case)] = eps
    out = []
    for name in names:
        m, p = per[(name, memory)], per[(name, persisted)]
        line = f"{name}:"
        for case, v in ((memory, m), (persisted, p)):
            if v:
                line += f" {case} {min(v) / 1e6:.2f} / {statistics.median(v) / 1e6:.2f} / {max(v) / 1e6:.2f} M (n={len(v)});"
        if m and p:
            mm, pm = statistics.median(m), statistics.median(p)
            pairs = [
                by_round[(r, name, persisted)] / eps
                for (r, n, c), eps in by_round.items()
                if n == name and c == memory and (r, name, persisted) in by_round
            ]
            line += f" ratio of medians {100 * pm / mm:.1f} %"
            if pairs:
                line += f", median per-round ratio {100 * statistics.median(pairs):.1f} %"
            line += f"; ns per event {1e9 / mm:.0f} / {1e9 / pm:.0f}, extra {1e9 / pm - 1e9 / mm:.0f}"
        out.append(line.rstrip(";"))
    return out


def main(argv):
    memory, persisted, logs = "passthrough-memory", "passthrough-persisted", []
    it = iter(argv)
    for a in it:
        if a == "--memory":
            memory = next(it)
        elif a == "--persisted":
            persisted = next(it)
        else:
            logs.append(a)
    if not logs:
        print(__doc__, file=sys.stderr)
        return 2
    rows = []
    for log in logs:
        with open(log) as f:
            rows += parse(f)
    for line in summary(rows, memory, persisted):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
