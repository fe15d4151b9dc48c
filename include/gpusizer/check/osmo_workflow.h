// NVIDIA OSMO workflow specs for `gpu-sizer check`: render the spec the way
// the OSMO service does before it creates one pod per task, then tell per
// resource block whether CPU, memory and storage fit its GPU count, and give
// the complete `--set` line that makes them fit
// ("train_gpu=4 train_cpu=32 train_memory=192Gi").
//
// Rendering (docs/osmo-workflow-spec.md, "Templates"):
//  - The text is split into top-level sections (`workflow:`, `default-values:`,
//    `version:`) as OSMO splits it; only the workflow section is rendered.
//    default-values is read as YAML from the raw text (quoted values stay
//    strings, plain `10` is an int, `true` a bool, as PyYAML reads them), then
//    each --set value overrides it, typed as `osmo workflow submit --set` does:
//    int if it parses as one, else float, else the string as given.
//  - `{{ var }}` / `{{var}}` are substituted. OSMO's special tokens written
//    without spaces ({{output}}, {{input:N}}, {{uuid}}, {{workflow_id}},
//    {{host:x}}) are kept as written. `{# ... #}` comments are dropped.
//  - Expressions: a small Jinja subset is evaluated: variables, int / float /
//    string literals, list literals, + - * / // % ~ and parentheses,
//    comparisons (== != < > <= >= in, not in), and / or / not, and filters
//    with positional arguments (int, float, string, lower, upper, trim,
//    default, replace, join, first, last, max, min, length, abs). So
//    `{{ [64, train_gpu|int * 48]|max }}Gi` renders. Any other expression
//    (attribute access, calls, tests, conditional expressions, text
//    multiplied by a number) is left unevaluated: outside resource blocks it
//    is ignored, in a resource field it is a finding that says check cannot
//    evaluate it. Whitespace-control dashes (`{{- x -}}`, `{%- if -%}`) are
//    accepted but strip nothing.
//  - `{% if %}` / `{% elif %}` / `{% else %}` / `{% endif %}` and
//    `{% for x in ... %}` / `{% endfor %}` blocks are rendered with the
//    variables' values; any other statement is an error.
//  - A variable with no value: OSMO fails the submit on it, but when sizing
//    does not read it (see check_osmo_workflow) check warns and goes on.
//    The same for a block whose condition check cannot evaluate, when no
//    branch of it changes what sizing reads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpusizer/check/input_limits.h"
#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

// True when the text looks like an OSMO workflow file: a top-level
// `workflow:` key (optionally `version:` and `default-values:` beside it)
// and no top-level `apiVersion:` or `kind:` (a Kubernetes object). Works on
// raw text, which need not be valid YAML before rendering.
bool is_osmo_workflow(std::string_view text);

// One task that uses a resource block.
struct OsmoTask {
  std::string task;     // task name
  std::string group;    // its group; "<task>-group" for a flat `tasks:` list
  std::string profile;  // the profile its pod would get
};

// Where a resource field's value comes from in the file.
struct OsmoFieldSource {
  enum class Kind {
    kAbsent,      // the field is not in the block
    kLiteral,     // written as a value: edit the file to change it
    kVariable,    // exactly one variable, optionally followed by a binary unit: set with --set
    kExpression,  // computed by a template expression (or text around a variable)
  };
  Kind kind = Kind::kAbsent;
  std::string variable;    // kVariable: the variable name (train_cpu)
  std::string unit;        // kVariable: the unit written after it ("Gi" in "{{mem}}Gi"), else ""
  std::string expression;  // kExpression: the value as written, e.g. "{{ [64, train_gpu|int * 48]|max }}Gi"
  bool evaluated = true;   // false: check could not evaluate the expression
  std::string problem;     // why it was not evaluated
  int line = 0;            // 1-based line of the value in the file; 0 when absent
};

struct OsmoBlockReport {
  std::string block;            // workflow.resources key, e.g. "train"
  std::vector<OsmoTask> tasks;  // tasks using it, in file order
  // The profile sizing the block: select_profile with labels
  // osmo.group_name=<group>, osmo.task_name=<task> plus workflow.labels, and
  // name=<task>, as the OSMO pod carries them. When tasks with different
  // profiles share the block, the one with the largest need, and the reason
  // says so.
  std::string profile;
  std::string profile_reason;
  // 0 when gpu is absent (nothing to size) or could not be evaluated
  // (gpu_source.evaluated is false and a finding says so).
  int64_t gpus = 0;
  std::optional<Quantity> cpu, memory, storage;  // rendered values; absent when unset or unevaluated
  OsmoFieldSource gpu_source, cpu_source, memory_source, storage_source;
  // What the block needs for min(gpus, max GPUs of its profiles); none for
  // blocks without GPUs or whose profiles have no table.
  std::optional<Requirement> need;
  // Each a sentence: "memory 64Gi is below 192Gi for 4 GPUs (train profile)",
  // "render profile allows at most 1 GPU, found 2". For a literal or computed
  // field the sentence says which field of resources.<block> to edit.
  std::vector<std::string> findings;
  // The --set pairs this block needs, named by the variables its fields
  // reference: for blocks with GPUs and a table profile the gpu, cpu and
  // memory variables (whichever are variables), plus storage when short;
  // the gpu variable lowered to the maximum when a profile caps it. A value
  // is max(current, need): a larger value the user set is kept as written.
  std::vector<std::string> set_values;
  // False for a block no task uses at these values, checked because a
  // --set value it reads was given (tasks are then the ones left out, when
  // check found them, and profile the one the variable's prefix names).
  bool used = true;
  // The file lines of the fields a finding says to edit (literal or computed
  // values): no --set value changes them.
  std::vector<int> edit_lines;
  bool fits() const { return findings.empty(); }
};

struct OsmoReport {
  // Blocks used by at least one task, and blocks no task uses whose fields
  // read a --set value (used false), in file order.
  std::vector<OsmoBlockReport> blocks;
  // Every --set pair to pass, shell-quoted where needed: all blocks'
  // set_values in order, deduplicated by variable (the larger value kept),
  // then the user's other --set values as given.
  // E.g. "train_gpu=4 train_cpu=32 train_memory=192Gi".
  std::string set_line;
  // Whether set_line changes a value the spec has now. When it does not and
  // a block does not fit, only editing the file fixes it: the text report
  // says so, naming the lines, instead of echoing the values as a fix.
  bool set_fixes = true;
  // What the user should know besides the blocks: variables with no value
  // that sizing does not read and blocks check could not decide that change
  // no task's resources (both errors with strict instead), and each block
  // no task uses that was checked for a --set value it reads.
  std::vector<std::string> warnings;
  bool fits() const;
};

// Renders the workflow with default-values overridden by set_values (OSMO
// semantics, see the top of this file), then checks each resource block used
// by a task. Tasks come from workflow.tasks (flat) or workflow.groups[].tasks;
// a task without `resource` uses `default`.
// A variable with no value fails the check (OSMO fails the submit too) when
// it is on a line sizing reads: a task's name, group or resource, a
// workflow label, a used block's name or its gpu, cpu, memory or storage.
// Elsewhere it is a warning. A block whose condition check cannot evaluate
// fails the check, naming its line and variable, when one of its branches
// would change what sizing reads; else it is a warning. With `strict`, every
// variable must have a value and every block be decided, as before.
// Also fails, naming the file's line where possible, on: YAML errors,
// statements other than if and for, unknown top-level keys, version other
// than 2, a missing or malformed workflow, tasks and groups together or
// neither, a resource name workflow.resources lacks, unknown or duplicate
// resource fields, and values OSMO rejects (a gpu that is not a whole
// number, cpu with a unit, memory or storage in decimal units; a bare number
// for memory or storage means Ki, as in OSMO), and YAML past `bounds` (each
// YAML text read: the version and default-values sections, each rendering).
Result<OsmoReport> check_osmo_workflow(const Policy& policy, std::string_view text,
                                       const std::map<std::string, std::string>& set_values, bool strict = false,
                                       const YamlBounds& bounds = InputLimits{}.yaml_bounds());

// Human text of a report: its warnings, then per block its tasks, profile,
// GPUs, and cpu / memory / storage found and needed, then OK or the
// findings; the last line is `--set <set_line>`, "all resource blocks fit",
// or, when no --set value fixes the blocks, the lines to edit.
std::string osmo_report_text(const std::string& file, const OsmoReport& report);

// The same data as JSON for `--output json`:
// {"file", "format": "osmo-workflow", "fits", "set", "setFixes", "warnings", "blocks": [{"block", "used",
//  "tasks": [{"task", "group", "profile"}], "profile", "profileReason",
//  "gpus" (null when unknown), "gpu": {"source"}, "cpu"|"memory"|"storage": {"found", "needed",
//  "source"}, "findings", "set", "fits"}]}; absent quantities are null.
nlohmann::json osmo_report_json(const std::string& file, const OsmoReport& report);

}  // namespace gpusizer
