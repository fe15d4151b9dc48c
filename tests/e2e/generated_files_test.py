#!/usr/bin/env python3
"""`make generate`'s check fails on drift, both ways, and says what to run.

Usage: generated_files_test.py SOURCE_DIR GPU_SIZER

On a copy of the generated files and their sources (never the checkout):
- the copy as checked in passes `generate.py --check`;
- a kind table with a row removed, or one added, fails it naming the
  webhook files and `make generate` (a fake binary prints the changed table);
- a hand edit of each generated copy of the default policy fails it naming
  that file; an edit of the default policy itself fails it naming every
  copy; a GPU row added to it fails naming docs/gpu-memory.md's table, and
  a row without a comment naming its source is refused, naming the row;
- after `generate.py` without --check, the check passes again.
"""

import os
import shutil
import subprocess
import sys
import tempfile

from fake_kinds import fake_binary

SOURCE, BINARY = sys.argv[1], sys.argv[2]
GENERATE = os.path.join(SOURCE, "cmd", "generate", "generate.py")
TREES = ["deploy", "charts", "tests/fuzz/policy.dict", "tests/fuzz/corpus/policy", "src/sizing/default_policy.yaml",
         "docs/gpu-memory.md"]
POLICY_COPIES = ["deploy/20-policy-configmap.yaml", "charts/gpu-sizer/files/default-policy.yaml",
                 "tests/fuzz/corpus/policy/default_policy.yaml"]
failures = []


def fresh_copy(into):
    for path in TREES:
        src, dst = os.path.join(SOURCE, path), os.path.join(into, path)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        (shutil.copytree if os.path.isdir(src) else shutil.copyfile)(src, dst)


def check(root, binary=BINARY):
    return subprocess.run([sys.executable, GENERATE, binary, "--check", "--root", root],
                          capture_output=True, text=True)


def expect(case, result, ok, names=()):
    said = result.stdout + result.stderr
    if (result.returncode == 0) != ok:
        failures.append(f"{case}: exit {result.returncode}, wanted {'0' if ok else '1'}\n{said}")
    for name in list(names) + ([] if ok else ["make generate"]):
        if name not in said:
            failures.append(f"{case}: the message does not name {name}\n{said}")


def edit(root, path, old="mode: mutate", new="mode: audit"):
    """A hand edit of `path`'s text: by default, the policy's mode set to audit."""
    with open(os.path.join(root, path), encoding="utf-8") as f:
        text = f.read()
    if old not in text:
        sys.exit(f"{path} has no `{old}` line to edit")
    with open(os.path.join(root, path), "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, 1))


def main():
    webhooks = ["deploy/50-mutatingwebhookconfiguration.yaml", "charts/gpu-sizer/templates/mutatingwebhookconfiguration.yaml"]
    with tempfile.TemporaryDirectory() as root:
        fresh_copy(root)
        expect("as checked in", check(root), ok=True)
        removed = fake_binary(BINARY, root, lambda kinds: [k for k in kinds if k["kind"] != "PyTorchJob"])
        expect("a kind removed from the table", check(root, removed), ok=False, names=webhooks)
        added = fake_binary(BINARY, root, lambda kinds: kinds + [dict(kinds[-1], kind="NewJob", resource="newjobs")])
        expect("a kind added to the table", check(root, added), ok=False, names=webhooks)
        for copy in POLICY_COPIES:
            edit(root, copy)
            expect(f"a hand edit of {copy}", check(root), ok=False, names=[copy])
            shutil.rmtree(root)
            fresh_copy(root)
        gpu_row = '    - {name: X1, memory: 24Gi, match: ["*-X1"]}\n'
        edit(root, "src/sizing/default_policy.yaml", "\n  gpus:\n", "\n  gpus:\n    # vendor 24 GB\n" + gpu_row)
        expect("a GPU row added", check(root), ok=False, names=["docs/gpu-memory.md"])
        edit(root, "src/sizing/default_policy.yaml", "    # vendor 24 GB\n", "")
        expect("a GPU row with no source", check(root), ok=False, names=["GPU row X1", "source"])
        shutil.rmtree(root)
        fresh_copy(root)
        edit(root, "src/sizing/default_policy.yaml")
        expect("the default policy edited", check(root), ok=False, names=POLICY_COPIES)
        subprocess.run([sys.executable, GENERATE, BINARY, "--root", root], check=True, capture_output=True)
        expect("after make generate", check(root), ok=True)
    for failure in failures:
        print("FAIL", failure, file=sys.stderr)
    print(f"generated files: {'FAILED' if failures else 'every drift is caught'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
