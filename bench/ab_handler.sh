#!/bin/bash
# Wall time of two builds of the handler micro benchmark, side by side:
# ROUNDS rounds, the order swapped each round so that neither build always
# runs first, pinned to one core; prints the median time per review of
# each and the difference. Instruction counts (callgrind) can agree while
# wall time does not: this is the check for "no slower".
#
# usage: bench/ab_handler.sh BEFORE_BENCH AFTER_BENCH [FILTER] [ROUNDS]
#   e.g. bench/ab_handler.sh /tmp/old/build/bench/gpu-sizer-micro-bench \
#          build/bench/gpu-sizer-micro-bench '^handler/pod-(12k|3k)' 8
set -euo pipefail
before=$1
after=$2
filter=${3:-^handler/}
rounds=${4:-8}
run() {
  taskset -c 1 "$2" --benchmark_filter="$filter" --benchmark_min_time=0.3 --benchmark_format=csv 2>/dev/null |
    grep '^"' | awk -F, -v build="$1" '{print build, $1, $4}'
}
for round in $(seq "$rounds"); do
  if ((round % 2)); then
    run before "$before"; run after "$after"
  else
    run after "$after"; run before "$before"
  fi
done | python3 -c '
import collections, statistics, sys
times = collections.defaultdict(list)
for line in sys.stdin:
    build, name, ns = line.split()
    times[(name, build)].append(float(ns))
for name in sorted({name for name, _ in times}):
    before = statistics.median(times[(name, "before")])
    after = statistics.median(times[(name, "after")])
    print(f"{name:40s} before {before:8.3f} after {after:8.3f} {100 * (after - before) / before:+5.1f}%")
'
