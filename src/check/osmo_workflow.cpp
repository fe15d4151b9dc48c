#include "gpusizer/check/osmo_workflow.h"

#include <algorithm>
#include <set>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "gpusizer/check/osmo/checker.h"
#include "gpusizer/check/osmo/fields.h"
#include "gpusizer/check/osmo/renderer.h"
#include "gpusizer/check/osmo/scanner.h"
#include "gpusizer/check/osmo/spec.h"
#include "gpusizer/check/osmo/unused_blocks.h"
#include "gpusizer/check/osmo/workflow.h"
#include "gpusizer/util/strings.h"

// Wires the units of src/check/osmo/: the sections and variables, the
// rendering, reading the rendered workflow's tasks and resource blocks, the
// checker for each block used, and the --set line.
namespace gpusizer {
namespace osmo {
namespace {

void check_version(const std::vector<std::string_view>& lines, const Section& section, const YamlBounds& bounds) {
  const std::string text = padded_section(lines, section);
  YAML::Node root;
  try {
    YamlBudget budget{bounds};
    root = load_yaml(text, budget);
  } catch (const YAML::ParserException& e) {
    throw SpecError{at_line(e.mark.line + 1) + "YAML error: " + e.msg};
  }
  const YAML::Node version = root["version"];
  const int line = static_cast<int>(section.first_line) + 1;
  if (!version.IsScalar()) throw SpecError{at_line(line) + "version must be 2"};
  const std::string value(trim(version.Scalar()));
  const auto as_int = python_int(value);
  const auto as_float = python_float(value);
  if (!((as_int && *as_int == 2) || (!as_int && as_float && *as_float == 2.0))) {
    throw SpecError{at_line(line) + "version " + value + " is not supported: OSMO accepts only version 2"};
  }
}

// The file lines of the values sizing reads: the tasks' names, groups and
// resource names (they choose the block and the profile), workflow.labels
// (the profile), and the used blocks' names and their gpu, cpu, memory and
// storage. A variable with no value on one of them blocks the check.
std::set<int> sizing_lines(const Workflow& workflow) {
  const SpecLines spec = workflow.spec();
  std::set<int> lines;
  for (const TaskRef& task : workflow.tasks) {
    lines.insert({task.line, task.group_line, spec.line_of(task.node["resource"])});
  }
  if (const YAML::Node node = workflow.workflow["labels"]; node && node.IsMap()) {
    for (const auto& entry : node) lines.insert({spec.line_of(entry.first), spec.line_of(entry.second)});
  }
  const YAML::Node resources = workflow.workflow["resources"];
  if (resources && resources.IsMap()) {
    for (const auto& entry : resources) {
      if (!entry.first.IsScalar() || !used(workflow, entry.first.Scalar())) continue;
      lines.insert(spec.line_of(entry.first));
      if (!entry.second.IsMap()) continue;
      for (const char* field : {"gpu", "cpu", "memory", "storage"}) lines.insert(spec.line_of(entry.second[field]));
    }
  }
  lines.erase(0);
  return lines;
}

// What sizing reads from a rendering, as text: two renderings with the same
// fingerprint size the same.
std::string sizing_fingerprint(const Workflow& workflow) {
  std::string out;
  for (const TaskRef& task : workflow.tasks) out += task.group + "/" + task.task + ":" + task.resource + "\n";
  for (const auto& [key, value] : workflow.labels) out += key + "=" + value + "\n";
  const YAML::Node resources = workflow.workflow["resources"];
  for (const auto& [name, index] : workflow.blocks) {
    if (!used(workflow, name)) continue;
    out += name + ":";
    const YAML::Node block = nth_value(resources, index);
    const YAML::Node marked = nth_value(workflow.marked_resources, index);
    if (block && block.IsMap()) {
      std::size_t field = 0;
      for (const auto& entry : block) {
        const YAML::Node marked_value = nth_value(marked, field++);
        const std::string written = marked_value && marked_value.IsScalar()
                                        ? field_source(marked_value.Scalar(), workflow.rendered, true).expression
                                        : std::string();
        out += " " + YAML::Dump(entry.first) + "=" + YAML::Dump(entry.second) + "(" + written + ")";
      }
    }
    out += "\n";
  }
  return out;
}

// Blocks check could not decide that change no task's resources become
// warnings; one that does is an error naming its line and variable.
void check_undecided(const Workflow& workflow, const std::vector<std::string_view>& lines, const Section& section,
                     const Variables& variables, const YamlBounds& bounds, std::vector<std::string>& warnings) {
  const std::string sized = sizing_fingerprint(workflow);
  for (const Undecided& block : workflow.rendered.undecided) {
    for (std::size_t alternative = 1; alternative < block.alternatives; ++alternative) {
      bool same = false;
      try {
        same = sizing_fingerprint(read_workflow(lines, section, variables, bounds, {{block.id, alternative}})) == sized;
      } catch (const SpecError&) {
        same = false;  // a branch that does not even read decides too
      }
      if (same) continue;
      throw SpecError{at_line(block.line) + "`" + block.tag +
                          "` decides which resources tasks get, and check cannot evaluate it: " + block.problem +
                          (block.variable.empty() ? std::string()
                                                  : "; pass --set " + block.variable +
                                                        "=VALUE or add it to "
                                                        "default-values"),
                      block.line};
    }
    warnings.push_back(at_line(block.line) + "`" + block.tag + "` was not evaluated (" + block.problem +
                       "); none of its branches changes a task's resources, so check went on with the first");
  }
}

OsmoReport check_spec(const Policy& policy, std::string_view text, const std::map<std::string, std::string>& set_values,
                      bool strict, const YamlBounds& bounds) {
  const std::vector<std::string_view> lines = split_lines(text);
  const Section* workflow_section = nullptr;
  const Section* defaults_section = nullptr;
  std::set<std::string> seen;
  const std::vector<Section> sections = find_sections(lines);
  for (const Section& section : sections) {
    const int line = static_cast<int>(section.first_line) + 1;
    if (!seen.insert(section.key).second) {
      throw SpecError{at_line(line) + "the top-level key " + section.key + " appears more than once"};
    }
    if (section.key == "workflow") {
      workflow_section = &section;
    } else if (section.key == "default-values") {
      defaults_section = &section;
    } else if (section.key == "version") {
      check_version(lines, section, bounds);
    } else {
      throw SpecError{at_line(line) + "unknown top-level key " + section.key +
                      " (an OSMO workflow spec has workflow, default-values and version)"};
    }
  }
  if (!workflow_section) throw SpecError{"no top-level workflow: key; this is not an OSMO workflow spec"};

  auto variables = template_variables(lines, defaults_section, set_values, bounds);
  if (!variables) throw SpecError{variables.error()};
  const Workflow workflow = read_workflow(lines, *workflow_section, variables.value(), bounds);
  const Rendered& rendered = workflow.rendered;
  const SpecLines spec = workflow.spec();

  OsmoReport report;
  if (strict) {
    if (!rendered.missing.empty()) throw SpecError{missing_variables_message(rendered.missing)};
    if (!rendered.undecided.empty()) {
      const Undecided& block = rendered.undecided.front();
      throw SpecError{at_line(block.line) + "`" + block.tag + "`: check cannot evaluate it (" + block.problem +
                      "), and --strict wants every variable set"};
    }
  } else {
    const std::set<int> sizing = sizing_lines(workflow);
    std::vector<MissingVariable> blocking, other;
    for (const MissingVariable& m : rendered.missing) (sizing.count(m.line) ? blocking : other).push_back(m);
    if (!blocking.empty()) throw SpecError{missing_variables_message(blocking)};
    if (!other.empty()) {
      report.warnings.push_back(missing_variables_message(other, false));
    }
    check_undecided(workflow, lines, *workflow_section, variables.value(), bounds, report.warnings);
  }

  std::vector<SetPair> pairs;
  const YAML::Node resources = workflow.workflow["resources"];
  const std::vector<UnusedBlock> unused =
      unused_set_blocks(workflow, lines, *workflow_section, variables.value(), set_values, bounds);
  for (const auto& [name, index] : workflow.blocks) {
    BlockInput input{policy, variables.value(), spec, name};
    for (const TaskRef& task : workflow.tasks) {
      if (task.resource == name) input.tasks.push_back(task);
    }
    if (input.tasks.empty()) {
      // A lambda cannot capture a structured binding in C++20.
      const std::string& block = name;
      auto it = std::find_if(unused.begin(), unused.end(), [&](const UnusedBlock& u) { return u.name == block; });
      if (it == unused.end()) continue;  // nothing runs it and nothing the user set sizes it
      const ProfileChoice choice = unused_block_profile(policy, *it);
      input.used = false;
      input.tasks = it->left_out;
      input.profile = choice.profile;
      input.profile_reason = choice.reason;
      report.warnings.push_back(unused_block_warning(*it));
    }
    if (index != std::string::npos) {
      input.block = nth_value(resources, index);
      input.marked_block = nth_value(workflow.marked_resources, index);
    }
    input.labels = workflow.labels;
    auto block = check_block(input, pairs);
    if (!block) throw SpecError{block.error()};
    report.blocks.push_back(std::move(block).value());
  }
  report.set_line = set_line(pairs, set_values, report.blocks);
  report.set_fixes = std::any_of(pairs.begin(), pairs.end(), [&](const SetPair& pair) {
    auto it = variables.value().find(pair.variable);
    return it == variables.value().end() || it->second.text != pair.value;
  });
  return report;
}

}  // namespace
}  // namespace osmo

bool is_osmo_workflow(std::string_view text) {
  // Every input check reads passes here: a line at a time, not split_lines,
  // whose index of lines costs 16 bytes a line (1 GiB for 64 MiB of
  // newlines).
  bool workflow = false;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    if (const auto key = osmo::section_key(text.substr(start, end - start))) {
      if (*key == "apiVersion" || *key == "kind") return false;
      workflow = workflow || *key == "workflow";
    }
    start = end + 1;
  }
  return workflow;
}

bool OsmoReport::fits() const {
  return std::all_of(blocks.begin(), blocks.end(), [](const OsmoBlockReport& b) { return b.fits(); });
}

Result<OsmoReport> check_osmo_workflow(const Policy& policy, std::string_view text,
                                       const std::map<std::string, std::string>& set_values, bool strict,
                                       const YamlBounds& bounds) {
  try {
    return osmo::check_spec(policy, text, set_values, strict, bounds);
  } catch (const osmo::SpecError& e) {
    return Status::invalid_argument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::failure(ProblemCode::kSyntax, "", osmo::at_line(e.mark.line >= 0 ? e.mark.line + 1 : 0) + e.msg);
  }
}

}  // namespace gpusizer
