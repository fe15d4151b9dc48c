#!/bin/bash
# Throughput of servers over TLS, side by side: ROUNDS rounds, each server
# started alone in turn, h2load (one thread, 16 keep-alive connections,
# 1 s warm-up, 5 s) POSTing WORKLOAD to /mutate; prints each run's req/s
# and each server's median. PIN=1 (the default) puts the server on core 1
# and h2load on core 0; PIN=0 leaves both to the scheduler on every core.
# A server is NAME=COMMAND, PORT in COMMAND replaced by the port. Quicker
# than bench/run.py, for A/B checks of one change (docs/performance.md).
#
# usage: bench/ab_server.sh WORKLOAD ROUNDS NAME=COMMAND...
#   e.g. bench/ab_server.sh bench/workloads/pod-3k-mutated.json 4 \
#          "before=/tmp/old/gpu-sizer serve --listen 127.0.0.1:PORT --tls-cert s.crt --tls-key s.key" \
#          "after=build/gpu-sizer serve --listen 127.0.0.1:PORT --tls-cert s.crt --tls-key s.key"
set -euo pipefail
workload=$1
rounds=$2
shift 2
port=18556
pin=${PIN:-1}
server_cpu=()
load_cpu=()
if [ "$pin" = 1 ]; then
  server_cpu=(taskset -c 1)
  load_cpu=(taskset -c 0)
fi
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
for _ in $(seq "$rounds"); do
  for spec in "$@"; do
    name=${spec%%=*}
    command=${spec#*=}
    "${server_cpu[@]}" bash -c "exec ${command//PORT/$port}" >/dev/null 2>"$log/$name.log" &
    server=$!
    for _ in $(seq 100); do
      curl -sk "https://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
      sleep 0.1
    done
    rps=$("${load_cpu[@]}" h2load --h1 -t1 -c 16 -D 5 --warm-up-time 1 -H "Content-Type: application/json" \
      -d "$workload" "https://127.0.0.1:$port/mutate" 2>&1 | sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p')
    kill -TERM "$server"
    wait "$server" || true
    echo "$name ${rps:-0}"
  done
done | tee /dev/stderr | python3 -c '
import collections, statistics, sys
rates = collections.defaultdict(list)
for line in sys.stdin:
    name, rps = line.split()
    rates[name].append(float(rps))
for name, values in rates.items():
    print(f"{name}: median {statistics.median(values):,.0f} req/s over {len(values)} runs")
'
