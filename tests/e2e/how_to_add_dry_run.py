#!/usr/bin/env python3
"""A scripted dry run of docs/architecture.md's "Where things go": how many
files a new built-in kind, a rule with settings and a GPU model take.

Usage: how_to_add_dry_run.py SOURCE_DIR GPU_SIZER

Each addition is made in a fresh copy of the tracked files, as the section
says, then `make generate` (cmd/generate/generate.py) writes the generated
files. The dry run passes when:
- `generate.py --check` passes on the copy afterwards (nothing else that
  the generator ties to the source was left to edit by hand);
- each C++ file the addition edits or creates compiles (-fsyntax-only
  against the copy's headers);
- the files written by hand, those differing from the checkout and not
  written by generate.py, are at most: a kind 5, a rule with settings 7, a
  GPU model 1 plus its test.
It prints each addition's hand-written and generated files. The kind's
`gpu-sizer kinds` output is the real table plus the new row (the binary is
not rebuilt): the generated files follow the table, whatever prints it.
"""

import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile

from fake_kinds import fake_binary

SOURCE, BINARY = os.path.abspath(sys.argv[1]), sys.argv[2]
GENERATE = os.path.join("cmd", "generate", "generate.py")
POLICY = "src/sizing/default_policy.yaml"
failures = []


def tracked_files():
    # Tracked files and new ones not yet added (a change under way), not ignored ones (builds).
    listed = ["git", "-C", SOURCE, "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    out = subprocess.run(listed, check=True, capture_output=True, text=True).stdout
    return [path for path in out.split("\0") if path and os.path.isfile(os.path.join(SOURCE, path))]


def copy_tree(into):
    for path in tracked_files():
        dst = os.path.join(into, path)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(SOURCE, path), dst, follow_symlinks=False)


def replace(root, path, old, new, count=1):
    """A hand edit: `old` must be in the file."""
    full = os.path.join(root, path)
    with open(full, encoding="utf-8") as f:
        text = f.read()
    if old not in text:
        sys.exit(f"dry run: {path} no longer holds the text this dry run edits:\n{old}\nupdate the dry run")
    with open(full, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, count))


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def changed_files(root):
    changed = []
    for directory, _, names in os.walk(root):
        for name in names:
            full = os.path.join(directory, name)
            path = os.path.relpath(full, root)
            original = os.path.join(SOURCE, path)
            if path.startswith("fake-") or path.endswith(".pyc"):
                continue
            if not os.path.isfile(original) or not filecmp.cmp(full, original, shallow=False):
                changed.append(path)
    return sorted(changed)


def compiles(root, path):
    """The copy's file compiles against the copy's headers."""
    compiler = os.environ.get("CXX", "c++")
    command = [compiler, "-std=c++20", "-fsyntax-only", "-DSIMDJSON_THREADS_ENABLED=1",
               f'-DGPU_SIZER_SOURCE_DIR="{root}"',
               "-I", os.path.join(root, "include"), "-I", os.path.join(root, "tests"), os.path.join(root, path)]
    result = subprocess.run(command, capture_output=True, text=True)
    return result.returncode == 0, result.stderr[-3000:]


def dry_run(name, limit, add, binary=None):
    with tempfile.TemporaryDirectory() as root:
        copy_tree(root)
        cpp = add(root)
        binary = binary(root) if binary else BINARY
        wrote = subprocess.run([sys.executable, os.path.join(root, GENERATE), binary, "--root", root],
                               capture_output=True, text=True)
        if wrote.returncode != 0:
            failures.append(f"{name}: make generate failed\n{wrote.stdout}{wrote.stderr}")
            return
        generated = set(re.findall(r"^generate.py: wrote (\S+)$", wrote.stdout, re.M))
        check = subprocess.run([sys.executable, os.path.join(root, GENERATE), binary, "--check", "--root", root],
                               capture_output=True, text=True)
        if check.returncode != 0:
            failures.append(f"{name}: generate.py --check fails after make generate\n{check.stderr}")
        for path in cpp:
            ok, errors = compiles(root, path)
            if not ok:
                failures.append(f"{name}: {path} does not compile after the listed edits\n{errors}")
        hand = [path for path in changed_files(root) if path not in generated]
        print(f"{name}: {len(hand)} files by hand (at most {limit}): {', '.join(hand)}")
        print(f"  generated: {', '.join(sorted(generated)) or 'none'}")
        if len(hand) > limit:
            failures.append(f"{name}: {len(hand)} files written by hand, more than {limit}: {hand}")


def add_kind(root):
    """A new built-in kind, as "A new workload kind" lists it."""
    replace(root, "src/workloads/kind_table.cpp", '''      {.group = "serving.kserve.io",
       .kind = "InferenceService",''', '''      {.group = "example.com",
       .kind = "ExampleServer",
       .locations = {{"spec.template"}},
       .resource = "exampleservers",
       .family = "example",
       .role = kServing,
       .long_lived = true},
      {.group = "serving.kserve.io",
       .kind = "InferenceService",''')
    replace(root, POLICY, "Service, Configuration], profile: infer}",
            "Service, Configuration, ExampleServer], profile: infer}")
    replace(root, POLICY, "Configuration, PodTemplate]\n", "Configuration, PodTemplate, ExampleServer]\n")
    write(root, "tests/data/workloads/exampleserver.yaml", """apiVersion: example.com/v1
kind: ExampleServer
metadata: {name: s, namespace: ml}
spec:
  template:
    spec:
      containers:
        - {name: server, image: x, resources: {limits: {nvidia.com/gpu: "2"}}}
""")
    replace(root, "tests/unit/workload_kinds_test.cpp",
            '''        KindCase{"notebook.yaml", {"spec.template"}, PodShape::kPod}),''',
            '''        KindCase{"notebook.yaml", {"spec.template"}, PodShape::kPod},
        KindCase{"exampleserver.yaml", {"spec.template"}, PodShape::kPod}),''')
    replace(root, "docs/workloads.md", "| Volcano Job | `spec.tasks[].template` |",
            "| Volcano Job | `spec.tasks[].template` |\n| ExampleServer | `spec.template` |")
    return ["src/workloads/kind_table.cpp", "tests/unit/workload_kinds_test.cpp"]


def kind_table(root):
    row = {"group": "example.com", "kind": "ExampleServer", "resource": "exampleservers", "family": "example",
           "role": "serving", "long_lived": True}
    return fake_binary(BINARY, root, lambda kinds: kinds + [dict(kinds[-1], **row)])


RULE_HEADER = """#pragma once

#include <string_view>

#include "gpusizer/sizing/policy_fields.h"
#include "gpusizer/sizing/rule.h"

namespace gpusizer {

struct ExamplePolicy {
  static constexpr std::string_view kKey = "example";
  Quantity floor = Quantity::from_bytes(1);
  void read(const YAML::Node& node, bool complete);
};

class ExampleRule final : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kExample; }
  Stage stage() const override { return Stage::kFloor; }
  RuleResult evaluate(const RuleInput& input) const override;
  const SettingsBlock* settings() const override;
};

}  // namespace gpusizer
"""

RULE_SOURCE = """#include "gpusizer/sizing/rules/example_rule.h"

namespace gpusizer {

void ExamplePolicy::read(const YAML::Node& node, bool complete) {
  if (complete || node["floor"]) floor = policy_fields::read_quantity(node["floor"], "example.floor");
}

RuleResult ExampleRule::evaluate(const RuleInput& input) const {
  RuleResult result;
  const auto& settings = input.policy.rule_settings.get<ExamplePolicy>();
  result.floors.push_back({0, kMemory, settings.floor, "example", "", ""});
  return result;
}

const SettingsBlock* ExampleRule::settings() const {
  static const SettingsBlockOf<ExamplePolicy> block;
  return &block;
}

}  // namespace gpusizer
"""


def add_rule(root):
    """A new rule with settings, as "A new sizing rule" lists it."""
    replace(root, "include/gpusizer/sizing/rule.h", "kGpuMemory, kNodeFit };", "kGpuMemory, kNodeFit, kExample };")
    write(root, "include/gpusizer/sizing/rules/example_rule.h", RULE_HEADER)
    write(root, "src/sizing/rules/example_rule.cpp", RULE_SOURCE)
    rules = "src/sizing/rules/rule_list.cpp"
    replace(root, rules, '#include "gpusizer/sizing/rules/table_rule.h"\n',
            '#include "gpusizer/sizing/rules/example_rule.h"\n#include "gpusizer/sizing/rules/table_rule.h"\n')
    replace(root, rules, '    case RuleKind::kNodeFit: return "node fit";\n',
            '    case RuleKind::kNodeFit: return "node fit";\n    case RuleKind::kExample: return "example";\n')
    replace(root, rules, "  static const NodeFitRule node_fit;\n",
            "  static const NodeFitRule node_fit;\n  static const ExampleRule example;\n")
    replace(root, rules, "&node_fit})", "&node_fit, &example})")
    replace(root, POLICY, "\nsharedMemory:", "\nexample:\n  floor: 1Gi\n\nsharedMemory:")
    write(root, "tests/unit/example_rule_test.cpp", '#include "gpusizer/sizing/rules/example_rule.h"\n')
    replace(root, "docs/rules.md", "\n## ", "\n## Example\n\nA floor of `example.floor`.\n\n## ")
    return ["src/sizing/rules/example_rule.cpp", "src/sizing/rules/rule_list.cpp"]


def add_gpu(root):
    """A new GPU model, as "A new GPU model" lists it."""
    replace(root, POLICY, "\n  gpus:\n", "\n  gpus:\n    # vendor 24 GB: https://example.com/x1\n"
            "    - {name: X1,              memory: 24Gi, match: [\"*-X1\", \"*-X1-SHARED\"]}\n")
    replace(root, "tests/unit/gpu_table_test.cpp", '    {"NVIDIA-L4", "L4", 23034},\n',
            '    {"NVIDIA-X1", "X1", 24576},\n    {"NVIDIA-L4", "L4", 23034},\n')
    return []


def main():
    dry_run("a new built-in kind", 5, add_kind, kind_table)
    dry_run("a new rule with settings", 7, add_rule)
    dry_run("a new GPU model", 2, add_gpu)
    for failure in failures:
        print("FAIL", failure, file=sys.stderr)
    print(f"how-to-add dry run: {'FAILED' if failures else 'each addition within its count'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
