#!/usr/bin/env bash
# Server CPU per TLS handshake, by key-exchange group: gpu-sizer serve with
# --tls-groups set to the one group, N handshakes by openssl s_client, the
# server's utime+stime (from /proc/PID/stat) before and after.
set -euo pipefail
BINARY=$1; N=${2:-200}
tick=$(getconf CLK_TCK)
for group in X25519 P-256 P-384 P-521 ffdhe2048 ffdhe4096 ffdhe8192; do
  dir=$(mktemp -d)
  "$BINARY" serve --listen 127.0.0.1:0 --cert-dir "$dir" --threads 1 --tls-groups "$group" >"$dir/out" 2>/dev/null &
  pid=$!
  for _ in $(seq 50); do grep -q listening "$dir/out" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$dir/out" | tail -1)
  cpu() { awk "{print \$14+\$15}" "/proc/$pid/stat"; }
  before=$(cpu)
  for _ in $(seq "$N"); do
    openssl s_client -connect "127.0.0.1:$port" -tls1_3 -groups "$group" -CAfile "$dir/ca.crt" </dev/null >/dev/null 2>&1
  done
  after=$(cpu)
  awk -v g="$group" -v a="$after" -v b="$before" -v t="$tick" -v n="$N" \
    'BEGIN { printf "%s %.2f ms of server CPU per handshake\n", g, (a - b) * 1000 / t / n }'
  kill $pid; wait $pid 2>/dev/null || true; rm -rf "$dir"
done
