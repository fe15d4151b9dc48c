"""A stand-in gpu-sizer for the generator's tests: its `kinds --output
json` is the real binary's table, changed, so a kind can be added or
removed without rebuilding (generated_files_test.py, how_to_add_dry_run.py)."""

import json
import os
import subprocess


def fake_binary(binary, into, change):
    """Writes `into`/fake-gpu-sizer printing change(the real table); returns its path."""
    kinds = json.loads(subprocess.run([binary, "kinds", "--output", "json"], check=True,
                                      capture_output=True, text=True).stdout)
    path = os.path.join(into, "fake-gpu-sizer")
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\ncat <<'TABLE'\n" + json.dumps(change(kinds)) + "\nTABLE\n")
    os.chmod(path, 0o755)
    return path
