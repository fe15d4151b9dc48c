#!/usr/bin/env python3
"""make corpus-check: `gpu-sizer check --nodes` over a corpus of real GPU manifests.

Usage: corpus_check.py GPU_SIZER CORPUS_DIR NODES_FILE [check flags...]

The corpus (by default ../shared/corpus beside the checkout) is not part of
the repository. Each file is checked on its own with `--output json --nodes
NODES_FILE` and a policy that patches long-lived templates too
(longLived.patchTemplates: true), so a Deployment's template is sized as its
Pods will be when created. One line per file, then a tally. Fails when:

  - the checker crashes on a file (an exit code other than 0 admitted,
    1 changed or denied, 2 an error it names);
  - a pod that some node holds as written is held by no node as sized
    (nodesBefore > 0, nodesAfter == 0): a mutation made it unschedulable;
  - a serving kind (or a pod of one) is sized with the train profile.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The kinds that run inference servers, as the embedded policy's profile
# rules name them (docs/workloads.md).
SERVING_KINDS = {
    "Deployment", "StatefulSet", "ReplicaSet", "LeaderWorkerSet", "RayService",
    "InferenceService", "LLMInferenceService", "NIMService",
}
# Sized as their Pods will be: the policy's longLived templates are patched here.
POLICY = "longLived:\n  patchTemplates: true\n"


def manifest_files(corpus):
    return sorted(p for p in Path(corpus).rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml", ".json"))


def check(binary, path, nodes, policy, flags):
    # A --policy of the caller's replaces the one that patches templates.
    own_policy = [] if "--policy" in flags else ["--policy", policy]
    args = [binary, "check", "--output", "json", "--nodes", nodes, *own_policy, *flags, str(path)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout, result.stderr


def pods_of(report):
    for file in report.get("files", []):
        for obj in file.get("objects", []):
            for pod in obj.get("pods", []):
                yield obj, pod


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    binary, corpus, nodes, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if not Path(corpus).is_dir() or not Path(nodes).is_file():
        print(f"corpus-check: skipped: no corpus at {corpus} or no node file {nodes} (set CORPUS=DIR NODES=FILE)")
        return 0
    tally = {0: 0, 1: 0, 2: 0}
    failures = []
    gpu_pods = 0
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as policy:
        policy.write(POLICY)
    try:
        for path in manifest_files(corpus):
            name = os.path.relpath(path, corpus)
            code, out, err = check(binary, path, nodes, policy.name, flags)
            if code not in tally:
                failures.append(f"{name}: CRASHED (exit {code}): {err.strip()[:300]}")
                print(f"{name}  CRASHED (exit {code})")
                continue
            tally[code] += 1
            report = json.loads(out) if out.strip().startswith("{") else {}
            if code == 2:
                errors = [f.get("error") for f in report.get("files", []) if f.get("error")]
                print(f"{name}  error: {(errors[0] if errors else err.strip())[:200]}")
            notes = []
            for obj, pod in pods_of(report):
                if pod.get("gpus", 0) <= 0:
                    continue
                gpu_pods += 1
                before, after = pod.get("nodesBefore"), pod.get("nodesAfter")
                if before and after == 0:
                    failures.append(f"{name}: {pod['pod']}: fits {before} node shape(s) as written, none as sized")
                    notes.append("MADE UNSCHEDULABLE")
                if obj.get("kind") in SERVING_KINDS and pod.get("profile") == "train":
                    failures.append(f"{name}: {pod['pod']}: a {obj['kind']} sized with the train profile")
                    notes.append("SERVER SIZED AS TRAINING")
                notes.append(f"{pod['pod']}: {pod.get('profile') or '-'}, nodes {before}->{after}")
            result = {0: "admitted", 1: "changed-or-denied", 2: "error"}[code]
            if code != 2:
                print(f"{name}  {result}" + ("  [" + "; ".join(notes) + "]" if notes else ""))
    finally:
        os.unlink(policy.name)
    print(f"corpus-check: {tally[0]} admitted unchanged, {tally[1]} changed or denied, {tally[2]} errors; "
          f"{gpu_pods} GPU pods; {len(failures)} failures")
    for failure in failures:
        print(f"  FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
