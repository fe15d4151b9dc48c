#!/usr/bin/env python3
"""Checks that two webhooks give the same answers to the benchmark's pod workloads.

usage: bench/compare_answers.py OURS_URL PEER_URL CA_FILE WORKLOADS_DIR [FILE.json ...]

Posts every workload of index.json whose kind is "pod" (or the review files
given after WORKLOADS_DIR, each to /mutate and /validate) to both servers,
e.g. https://127.0.0.1:18501 and https://127.0.0.1:18502, with CA_FILE
verifying both, and compares the responses: allowed, status (code, message,
reason), warnings, auditAnnotations and the JSON Patch (base64-decoded,
compared as parsed JSON arrays, in order). Prints one line per request, and
exits 1 when any answer differs or a request fails (2 on bad usage).
"""
import base64
import json
import os
import ssl
import sys
import urllib.error
import urllib.request

FIELDS = ("allowed", "status", "warnings", "auditAnnotations", "patch")


def post(url, body, context):
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def comparable(answer):
    response = answer.get("response", {}) if isinstance(answer, dict) else {}
    out = {field: response.get(field) for field in FIELDS}
    if out["patch"] is not None:
        out["patch"] = json.loads(base64.b64decode(out["patch"]))
    if out["status"] is not None:
        out["status"] = {key: out["status"].get(key) for key in ("code", "message", "reason")}
    return out


def short(value, limit=300):
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


def diff(ours, peer):
    lines = []
    for field in FIELDS:
        a, b = ours[field], peer[field]
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list):
            for i in range(max(len(a), len(b))):
                x = a[i] if i < len(a) else "<missing>"
                y = b[i] if i < len(b) else "<missing>"
                if x != y:
                    lines.append(f"    {field}[{i}]: ours {short(x)}\n    {' ' * len(field)}     peer {short(y)}")
        else:
            lines.append(f"    {field}: ours {short(a)}\n    {' ' * len(field)}  peer {short(b)}")
    return "\n".join(lines)


def main():
    if len(sys.argv) < 5:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    ours_url, peer_url, ca_file, workloads = sys.argv[1:5]
    context = ssl.create_default_context(cafile=ca_file)
    if len(sys.argv) > 5:
        jobs = [(path, endpoint) for path in sys.argv[5:] for endpoint in ("mutate", "validate")]
    else:
        with open(os.path.join(workloads, "index.json")) as f:
            index = json.load(f)
        jobs = [(os.path.join(workloads, e["file"]), e["endpoint"]) for e in index if e["kind"] == "pod"]
    different = failed = 0
    for path, endpoint in jobs:
        with open(path, "rb") as f:
            body = f.read()
        name = f"{os.path.basename(path)} /{endpoint}"
        answers = []
        for base in (ours_url, peer_url):
            status, answer = post(base.rstrip("/") + "/" + endpoint, body, context)
            answers.append((status, answer))
        if any(status != 200 for status, _ in answers):
            failed += 1
            print(f"FAILED     {name}: ours HTTP {answers[0][0]}, peer HTTP {answers[1][0]}: "
                  f"{short(answers[0][1])} / {short(answers[1][1])}")
            continue
        ours, peer = (comparable(answer) for _, answer in answers)
        if ours == peer:
            decision = "denied" if not ours["allowed"] else "mutated" if ours["patch"] else "allowed"
            print(f"same       {name} ({decision})")
        else:
            different += 1
            print(f"DIFFERENT  {name}\n{diff(ours, peer)}")
    print(f"{len(jobs)} requests: {len(jobs) - different - failed} same, {different} different, {failed} failed")
    return 1 if failed or different else 0


if __name__ == "__main__":
    sys.exit(main())
