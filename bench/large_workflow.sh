#!/bin/bash
# Issue 30's large workflow through a running server: 3,000 torchrun
# templates of 4 GPUs (tests/support/hostile_reviews.h), posted five times
# over TLS. Prints the JSON Patch operations per container, the answer's
# size and warnings, each request's time, and the server's RSS idle, at its
# peak and 2 s after (docs/performance.md, "Issue 30").
#
# RSS counts the binary's code pages too: the idle reading follows a small
# pod and a small workflow, so that the code a workflow runs is already
# paged in; RssAnon (heap, stacks) is printed beside it.
#
# usage: bench/large_workflow.sh GPU_SIZER MICRO_BENCH [TEMPLATES] [PORT]
#   e.g. bench/large_workflow.sh build/gpu-sizer build/bench/gpu-sizer-micro-bench
set -euo pipefail
binary=$1
micro_bench=$2
templates=${3:-3000}
port=${4:-18601}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pid=""
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

"$micro_bench" --hostile="workflow-4gpu-templates:$templates" >"$work/review.json"
"$binary" serve --listen "127.0.0.1:$port" --cert-dir "$work/certs" --log-level warn >"$work/server.log" 2>&1 &
pid=$!
post() {
  curl -s -o "$2" -w "%{time_total}\n" --cacert "$work/certs/ca.crt" -H 'Content-Type: application/json' \
    --data-binary "@$1" "https://127.0.0.1:$port/mutate"
}
for _ in $(seq 50); do
  [ -f "$work/certs/ca.crt" ] && post "$root/bench/workloads/pod-3k-mutated.json" /dev/null >/dev/null 2>&1 && break
  sleep 0.2
done
post "$root/bench/workloads/workflow-3k-mutated.json" /dev/null >/dev/null
sleep 1
rss() { awk -v key="$1:" '$1 == key {print $2}' "/proc/$pid/status"; }
idle="$(rss VmRSS) $(rss RssAnon)"
for _ in 1 2 3 4 5; do post "$work/review.json" "$work/answer.json"; done >"$work/times.txt"
peak=$(rss VmHWM)
sleep 2
after="$(rss VmRSS) $(rss RssAnon)"
# shellcheck disable=SC2086 # two numbers each
python3 - "$work" "$templates" $idle "$peak" $after <<'PY'
import base64, json, sys
work, templates = sys.argv[1], int(sys.argv[2])
idle, idle_anon, peak, after, after_anon = (int(v) / 1024 for v in sys.argv[3:])
answer = json.load(open(work + "/answer.json"))["response"]
ops = json.loads(base64.b64decode(answer["patch"]))
times = [round(float(t) * 1000) for t in open(work + "/times.txt")]
print(f"{len(ops)} operations ({len(ops) / templates:.1f} per container), "
      f"answer {len(base64.b64decode(answer['patch'])) / 1e6:.2f} MB of patch, "
      f"{len(answer.get('warnings', []))} warnings; ms per request {times}; "
      f"RSS idle {idle:.1f} MiB (anonymous {idle_anon:.1f}), peak {peak:.1f}, "
      f"2 s after {after:.1f} (anonymous {after_anon:.1f})")
PY
