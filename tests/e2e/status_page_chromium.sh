#!/usr/bin/env bash
# End-to-end test of the status page (GET /status on the metrics listener)
# in headless Chromium (Debian package `chromium`).
#
#   tests/e2e/status_page_chromium.sh GPU_SIZER_BINARY REPO_ROOT [SCREENSHOT_PNG]
#
# Starts `gpu-sizer serve` on an ephemeral HTTPS port with plain-HTTP metrics
# on a free port picked here, sends AdmissionReviews over TLS with curl
# (verifying the generated CA): a 4-GPU pod to /mutate (mutated), the same
# pod opted out to /validate (denied), a dry-run, and one whose name is
# hostile markup. Then it loads http://127.0.0.1:PORT/status in headless
# Chromium, checks the rendered DOM (objects, decisions, the sizing rows,
# the policy sha256 against /metrics, escaping, newest first) and takes a
# 1400x1800 screenshot, kept at SCREENSHOT_PNG when given (otherwise in the
# temporary directory, deleted at exit). Exits 0 on success; on any failure
# prints what failed, with the server's and Chromium's logs, and exits 1.
# The server is killed at exit whatever happens.
#
# CHROMIUM=/path/to/chromium overrides the browser (default: `chromium`).
set -euo pipefail

usage() {
  echo "usage: $0 GPU_SIZER_BINARY REPO_ROOT [SCREENSHOT_PNG]" >&2
  exit 2
}
[[ $# -ge 2 && $# -le 3 ]] || usage
BINARY=$1
REPO=$2
SCREENSHOT=${3:-}
CHROMIUM=${CHROMIUM:-chromium}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

[[ -x $BINARY ]] || fail "gpu-sizer binary \"$BINARY\" does not exist or is not executable"
REVIEW=$REPO/tests/data/review-4gpu-64gi.json
[[ -f $REVIEW ]] || fail "$REVIEW not found: is \"$REPO\" the gpu-sizer repository root?"
command -v "$CHROMIUM" >/dev/null ||
  fail "\"$CHROMIUM\" not found: install the Debian package chromium (apt-get install -y chromium; make test installs it)"
for tool in curl python3 timeout; do
  command -v "$tool" >/dev/null || fail "$tool not found: install it (Debian packages curl, python3, coreutils)"
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpu-sizer-status-e2e.XXXXXX")
SERVER_PID=
cleanup() {
  local status=$?
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [[ $status -ne 0 ]]; then
    for log in server.stderr chromium-dom.stderr chromium-shot.stderr; do
      if [[ -s $TMP/$log ]]; then
        echo "--- $log (last 30 lines) ---" >&2
        tail -n 30 "$TMP/$log" >&2
      fi
    done
  fi
  rm -rf "$TMP"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# --- start the server ------------------------------------------------------
# The metrics port is picked here and bound by the server a moment later;
# another process may take it in between, so a failed start is retried.
WEBHOOK=
for attempt in 1 2 3; do
  METRICS_PORT=$(free_port)
  "$BINARY" serve --listen 127.0.0.1:0 --metrics-listen "127.0.0.1:$METRICS_PORT" --cert-dir "$TMP/certs" \
    >"$TMP/server.stdout" 2>"$TMP/server.stderr" &
  SERVER_PID=$!
  for _ in $(seq 200); do
    WEBHOOK=$(sed -n 's|^listening on \(https://.*\)$|\1|p' "$TMP/server.stdout")
    [[ -n $WEBHOOK ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $WEBHOOK ]] && break
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
  echo "gpu-sizer did not start (attempt $attempt): $(tail -n 3 "$TMP/server.stderr")" >&2
done
[[ -n $WEBHOOK ]] || fail "gpu-sizer serve did not print \"listening on https://...\" within 20 s"
STATUS_URL=http://127.0.0.1:$METRICS_PORT/status
echo "gpu-sizer listening on $WEBHOOK, status page $STATUS_URL"

# --- send reviews ----------------------------------------------------------
# Each variant of the 4-GPU review: NAME and an optional annotation/dry run.
make_review() {  # OUT NAME UID OPT_OUT(true|false) DRY_RUN(true|false)
  python3 - "$REVIEW" "$@" <<'EOF'
import json, sys
source, out, name, uid, opt_out, dry_run = sys.argv[1:]
review = json.load(open(source))
request = review["request"]
request["uid"] = uid
request["name"] = name
request["dryRun"] = dry_run == "true"
request["object"]["metadata"]["name"] = name
if opt_out == "true":
    request["object"]["metadata"].setdefault("annotations", {})["gpu-sizer.io/mutate"] = "false"
json.dump(review, open(out, "w"))
EOF
}

send() {  # ENDPOINT FILE EXPECTED(mutated|denied|allowed)
  local endpoint=$1 file=$2 expected=$3 answer
  answer=$(curl -sS --max-time 10 --cacert "$TMP/certs/ca.crt" -H 'Content-Type: application/json' \
    --data-binary "@$file" "$WEBHOOK/$endpoint") || fail "POST /$endpoint with $(basename "$file") failed"
  python3 - "$expected" "$answer" <<'EOF' || fail "POST /$endpoint $(basename "$file"): expected $expected, got: $answer"
import json, sys
expected, answer = sys.argv[1], json.loads(sys.argv[2])["response"]
got = "denied" if not answer["allowed"] else "mutated" if "patch" in answer else "allowed"
sys.exit(0 if got == expected else 1)
EOF
}

HOSTILE_NAME='<img src=x onerror="document.title=1">'
make_review "$TMP/mutate.json" train-x uid-1 false false
make_review "$TMP/optout.json" train-optout uid-2 true false
make_review "$TMP/dry.json" train-dry uid-3 false true
make_review "$TMP/hostile.json" "$HOSTILE_NAME" uid-4 false false
send mutate "$TMP/mutate.json" mutated
send validate "$TMP/optout.json" denied
send mutate "$TMP/dry.json" mutated
send mutate "$TMP/hostile.json" mutated

# --- the page over plain HTTP ----------------------------------------------
HTTP_STATUS=$(curl -sS --max-time 10 -o "$TMP/status.html" -D "$TMP/status.headers" -w '%{http_code}' "$STATUS_URL") ||
  fail "GET $STATUS_URL failed"
[[ $HTTP_STATUS == 200 ]] ||
  fail "GET $STATUS_URL answered $HTTP_STATUS, not 200 (is /status registered on the metrics server?)"
grep -qi '^content-type: text/html' "$TMP/status.headers" ||
  fail "GET $STATUS_URL content type is not text/html: $(grep -i '^content-type' "$TMP/status.headers")"
SHA256=$(curl -sS --max-time 10 "http://127.0.0.1:$METRICS_PORT/metrics" |
  sed -n 's/^gpu_sizer_policy_info{.*sha256="\([0-9a-f]\{64\}\)".*/\1/p' | head -n 1)
[[ -n $SHA256 ]] || fail "no gpu_sizer_policy_info sha256 in /metrics to compare the page with"

# --- headless Chromium -----------------------------------------------------
chromium_run() {  # STDERR_FILE ARGS...
  local stderr=$1
  shift
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage \
    --user-data-dir="$TMP/profile" "$@" 2>"$stderr"
}

chromium_run "$TMP/chromium-dom.stderr" --dump-dom "$STATUS_URL" >"$TMP/dom.html" ||
  fail "chromium --dump-dom $STATUS_URL failed (exit $?)"
[[ -s $TMP/dom.html ]] || fail "chromium --dump-dom printed nothing for $STATUS_URL"

python3 - "$TMP/dom.html" "$SHA256" "$HOSTILE_NAME" <<'EOF' || fail "the DOM Chromium rendered lacks what it should show (above)"
import html, re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
sha256, hostile = sys.argv[2], sys.argv[3]
problems = []
def need(text, why):
    if text not in dom:
        problems.append(f"missing {text!r} ({why})")
# A name Kubernetes would refuse is shown quoted and escaped (shown_name), then HTML-escaped.
shown_hostile = "team-a/" + html.escape('"' + hostile.replace("\\", "\\\\").replace('"', '\\"') + '"', quote=False)
need("<title>gpu-sizer status</title>", "the title; a script from the hostile name would change it")
for name in ("team-a/train-x", "team-a/train-optout", "team-a/train-dry"):
    need(name, "a reviewed object")
need(shown_hostile, "the hostile object name, quoted, as text")
need(">mutated<", "a mutated decision")
need(">denied<", "the denied decision")
need(">dry run<", "the dry-run mark")
need("192Gi", "train memory for 4 GPUs")
need("144Gi", "train memory for 3 GPUs")
need(">interpolated<", "the interpolated-row mark")
need(sha256, "the active policy's sha256 from /metrics")
need("need memory &gt;= 192Gi", "the denial message")
if "<img" in dom:
    problems.append("the hostile name became an <img> element: not escaped")
if re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", dom, re.I):
    problems.append("the page refers to an external asset")
# Newest first: the last review sent comes first.
order = [dom.find(shown_hostile), dom.find("team-a/train-dry"),
         dom.find("team-a/train-optout"), dom.find("team-a/train-x")]
if -1 not in order and order != sorted(order):
    problems.append(f"decisions are not newest first (positions {order})")
for p in problems:
    print("  " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
echo "DOM checks passed"

OUT=${SCREENSHOT:-$TMP/status-page.png}
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
chromium_run "$TMP/chromium-shot.stderr" --hide-scrollbars --window-size=1400,1800 --screenshot="$OUT" "$STATUS_URL" \
  >/dev/null || fail "chromium --screenshot $STATUS_URL failed (exit $?)"
[[ -f $OUT ]] || fail "chromium wrote no screenshot at $OUT"
SIZE=$(stat -c %s "$OUT")
[[ $(head -c 8 "$OUT" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "$OUT is not a PNG"
((SIZE > 20480)) || fail "$OUT is only $SIZE bytes: the page looks blank"
echo "screenshot $OUT ($SIZE bytes)"
echo "PASS: status page in headless Chromium"
