#!/usr/bin/env python3
"""Sizing is linear in the review (issue 25): a deterministic check.

For each case (a hostile review shape of tests/support/hostile_reviews.h, an
endpoint, with or without the node classes of the generated fleet), the
handler answers the review with n items and with 4n under callgrind
(`gpu-sizer-micro-bench --hostile=SHAPE:N:ENDPOINT[:classes],...`, every
case's reviews in one process), counting the instructions of
handle_review alone. Linear work grows 4x, quadratic 16x; a
case fails when the count grows more than LIMIT (5x: room for n log n and
for constants that differ with the compiler, none for a quadratic term
that is a tenth of the work at n).

Instruction counts are exact and the same on every run, whatever else the
machine does: this is a complexity check, not a timing. Valgrind cannot run
sanitizer builds, so CMake registers it only in plain builds (the ctest
linear_scale, label "scale"); the unit and integration suites run under
the sanitizers as before.

  bench/linear_scale.py --bench BUILD/bench/gpu-sizer-micro-bench [CASE...]
  bench/linear_scale.py --list

Exit status 0 when every case is linear, 1 otherwise. Python standard
library and valgrind only.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

LIMIT = 5.0
GROWTH = 4

# name: (shape, endpoint, with the node inventory, n). Each n makes the
# larger review's handler run take well under a second natively (about a
# minute under callgrind for all cases); each case reaches the step it
# names with a quadratic term of at least a tenth of the work at n in the
# code before issue 25.
CASES = {
    # PodSizer::report: each denial and sized request walked every shortfall.
    "report": ("pod-gpu-containers", "validate", False, 1000),
    # pod_request: each init container summed the sidecars before it, each
    # sized request through every shortfall; node caps' sidecars per phase.
    "init-and-sidecars": ("pod-sidecars", "validate", True, 400),
    "node-caps-sidecars": ("pod-sidecars", "mutate", True, 1000),
    # node caps: each app container looked for among the GPU holders.
    "node-caps-holders": ("pod-sized-containers", "mutate", True, 2000),
    # /dev/shm: each container's volume looked for among the others' and
    # among the pod's volumes.
    "shm-volumes": ("pod-shm-volumes", "validate", False, 1000),
    # DRA claims: each container's claim looked for among the pod's.
    "claims": ("pod-claims", "validate", False, 2000),
    # candidate filter: the nodeSelector copied into every affinity term.
    "node-selector-and-terms": ("pod-scheduling", "mutate", True, 2000),
    # the object's metadata read again for each template.
    "workflow-metadata": ("workflow-metadata", "validate", False, 2000),
    # the workflow's volumes, scheduling and templateDefaults read again
    # (and weighed against the nodes again) for each template.
    "workflow-volumes": ("workflow-volumes", "mutate", False, 1000),
    "workflow-scheduling": ("workflow-scheduling", "mutate", True, 1000),
    # the instance catalogue: a workflow's affinity terms on instance types
    # no node is, looked at again for each template.
    "workflow-machines": ("workflow-machines", "mutate", True, 1000),
    "workflow-defaults": ("workflow-defaults", "validate", False, 2000),
    # UPDATE: each template's old copy found by walking the array to it.
    "unchanged-templates": ("workflow-update", "mutate", False, 1000),
    # the GPU-ask scan compared each node's path with every template's.
    "gpu-ask-scan": ("workflow-dag", "validate", False, 2000),
    "jobset-scan": ("jobset", "validate", False, 1000),
    # the object's name and annotations copied into each pod's messages.
    "long-strings": ("long-strings", "validate", False, 200),
}


def spec_of(shape, endpoint, nodes, n):
    return f"{shape}:{n}:{endpoint}" + (":classes" if nodes else "")


def instructions(bench, specs):
    """Instructions of handle_review answering each spec's review, by spec.

    One callgrind process answers them all (the bench dumps the count after
    each answer, named by its spec): valgrind's start-up, about a second,
    is paid once rather than twice per case."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        # Only the handler runs instrumented (the bench turns it on around
        # the call): building a review and the node classes under
        # instrumentation was most of this test's time.
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--instr-atstart=no",
                "--toggle-collect=gpusizer::handle_review*", bench, "--hostile=" + ",".join(specs)]
        run = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        answered = run.stdout.count("HTTP 200")
        if run.returncode != 0 or answered != len(specs):
            raise RuntimeError(f"{answered} of {len(specs)} answered with HTTP 200, exit {run.returncode}: "
                               f"{run.stdout.strip()[-500:]} {run.stderr.strip()[-500:]}")
        counts = {}
        for name in os.listdir(scratch):
            spec = total = None
            with open(os.path.join(scratch, name)) as f:
                for line in f:
                    # "totals", not "summary": with --instr-atstart=no the
                    # summary line says 0.
                    trigger = re.match(r"desc: Trigger: Client Request: (\S+)", line)
                    found = re.match(r"totals:\s+(\d+)", line)
                    spec = trigger.group(1) if trigger else spec
                    total = int(found.group(1)) if found else total
            if spec is not None and total is not None:
                counts[spec] = total
    missing = [spec for spec in specs if spec not in counts]
    if missing:
        raise RuntimeError("callgrind wrote no totals for " + ", ".join(missing))
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", help="the gpu-sizer-micro-bench binary")
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    parser.add_argument("cases", nargs="*", help="cases to run (default: all)")
    args = parser.parse_args()
    if args.list:
        for name, (shape, endpoint, nodes, n) in CASES.items():
            print(f"{name}: {shape} at /{endpoint}{' with nodes' if nodes else ''}, n={n} and {GROWTH * n}")
        return 0
    if not args.bench:
        parser.error("--bench is required")
    names = args.cases or list(CASES)
    unknown = [name for name in names if name not in CASES]
    if unknown:
        parser.error("unknown cases: " + ", ".join(unknown))
    specs = [spec_of(*CASES[name][:3], size) for name in names for size in (CASES[name][3], GROWTH * CASES[name][3])]
    counts = instructions(args.bench, specs)
    failed = []
    for name in names:
        shape, endpoint, nodes, n = CASES[name]
        small = counts[spec_of(shape, endpoint, nodes, n)]
        large = counts[spec_of(shape, endpoint, nodes, GROWTH * n)]
        growth = large / small
        verdict = "linear" if growth <= LIMIT else "NOT LINEAR"
        print(f"{name}: {shape} /{endpoint}{' +nodes' if nodes else ''}: n={n} {small:,} instructions, "
              f"{GROWTH}n {large:,}: x{growth:.2f} ({verdict}, limit x{LIMIT})", flush=True)
        if growth > LIMIT:
            failed.append(name)
    if failed:
        print("not linear: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
