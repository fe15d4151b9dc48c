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
#include "gpusizer/util/strings.h"

// Wires the units of src/check/osmo/: the sections and variables, the
// rendering, reading the rendered workflow's tasks and resource blocks, the
// checker for each block used, and the --set line.
namespace gpusizer {
namespace osmo {
namespace {

void check_version(const std::vector<std::string_view>& lines, const Section& section) {
  const std::string text = padded_section(lines, section);
  YAML::Node root;
  try {
    root = YAML::Load(text);
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

// The workflow's tasks, flat or in groups, each with its resource block.
std::vector<TaskRef> read_tasks(const SpecLines& spec, const YAML::Node& workflow) {
  const YAML::Node flat = workflow["tasks"];
  const YAML::Node groups = workflow["groups"];
  if (flat && groups) spec.fail(groups, "workflow has both tasks and groups; OSMO takes exactly one of them");
  if (!flat && !groups) spec.fail(workflow, "workflow has neither tasks nor groups");
  std::vector<TaskRef> tasks;
  auto read_task = [&](const YAML::Node& node, const std::string& path, const std::string* group, int group_line) {
    if (!node.IsMap()) spec.fail(node, path + " must be a mapping");
    const YAML::Node name = node["name"];
    if (!name || !name.IsScalar() || name.Scalar().empty()) spec.fail(node, path + " has no name");
    TaskRef task;
    task.task = name.Scalar();
    task.group = group ? *group : task.task + "-group";
    task.line = spec.line_of(name);
    task.group_line = group_line;
    task.node = node;
    const YAML::Node resource = node["resource"];
    task.resource = resource && !resource.IsNull() ? spec.scalar_text(resource, path + ".resource") : "default";
    tasks.push_back(task);
  };
  if (flat) {
    if (!flat.IsSequence()) spec.fail(flat, "workflow.tasks must be a list");
    for (std::size_t t = 0; t < flat.size(); ++t)
      read_task(flat[t], "workflow.tasks[" + std::to_string(t) + "]", nullptr, 0);
    return tasks;
  }
  if (!groups.IsSequence()) spec.fail(groups, "workflow.groups must be a list");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::string path = "workflow.groups[" + std::to_string(g) + "]";
    const YAML::Node group = groups[g];
    if (!group.IsMap()) spec.fail(group, path + " must be a mapping");
    const YAML::Node name = group["name"];
    if (!name || !name.IsScalar() || name.Scalar().empty()) spec.fail(group, path + " has no name");
    const YAML::Node group_tasks = group["tasks"];
    if (!group_tasks || !group_tasks.IsSequence()) spec.fail(group, path + " has no tasks list");
    const std::string& group_name = name.Scalar();
    for (std::size_t t = 0; t < group_tasks.size(); ++t) {
      read_task(group_tasks[t], path + ".tasks[" + std::to_string(t) + "]", &group_name, spec.line_of(name));
    }
  }
  return tasks;
}

// The resource blocks in file order, each with its index in
// workflow.resources (npos for OSMO's implicit `default: {}` when the key is
// absent). Fails on a task using a block that is not defined.
std::vector<std::pair<std::string, std::size_t>> read_blocks(const SpecLines& spec, const YAML::Node& resources,
                                                             const std::vector<TaskRef>& tasks) {
  std::vector<std::pair<std::string, std::size_t>> blocks;
  if (resources && !resources.IsNull()) {
    if (!resources.IsMap()) spec.fail(resources, "workflow.resources must be a mapping of named resource specs");
    spec.check_unique_keys(resources, "resources");
    std::size_t index = 0;
    for (const auto& entry : resources) blocks.emplace_back(entry.first.Scalar(), index++);
  }
  const bool implicit_default = !resources || resources.IsNull();
  std::vector<std::string> known;
  for (const auto& [name, index] : blocks) known.push_back(name);
  for (const TaskRef& task : tasks) {
    const bool defined = std::find(known.begin(), known.end(), task.resource) != known.end();
    if (defined || (implicit_default && task.resource == "default")) continue;
    const YAML::Node resource = task.node["resource"];
    spec.fail(resource ? resource : task.node["name"],
              "task " + task.task + " uses resource " + task.resource + ", which workflow.resources does not define" +
                  (known.empty() ? std::string() : " (defined: " + join(known, ", ") + ")"));
  }
  if (implicit_default) blocks.emplace_back("default", std::string::npos);
  return blocks;
}

// The workflow section rendered with the variables (and a choice for
// blocks check cannot decide), and read: its tasks and resource blocks.
struct Workflow {
  Rendered rendered;
  YAML::Node workflow;
  YAML::Node marked_resources;
  std::map<std::string, std::string, std::less<>> labels;
  std::vector<TaskRef> tasks;
  std::vector<std::pair<std::string, std::size_t>> blocks;  // as read_blocks gives them
  SpecLines spec() const { return SpecLines{&rendered}; }
};

// Throws SpecError. A failure on a line where a variable has no value names
// that variable: the placeholder it rendered as is what failed.
Workflow read_workflow(const std::vector<std::string_view>& lines, const Section& section, const Variables& variables,
                       const BlockChoices& choices) {
  auto rendered = render(padded_section(lines, section), variables, choices);
  if (!rendered) throw SpecError{rendered.error()};
  Workflow out;
  out.rendered = std::move(rendered).value();
  try {
    const SpecLines spec = out.spec();
    YAML::Node root;
    try {
      root = YAML::Load(out.rendered.text);
    } catch (const YAML::ParserException& e) {
      const auto index = static_cast<std::size_t>(std::max(0, e.mark.line));
      const int line = index < out.rendered.file_line.size() ? out.rendered.file_line[index] : e.mark.line + 1;
      throw SpecError{at_line(line) + "YAML error after rendering: " + e.msg, line};
    }
    YAML::Node marked_root;
    try {
      marked_root = YAML::Load(out.rendered.marked);
    } catch (const YAML::Exception&) {
      marked_root = YAML::Node();  // sources then read as literal
    }
    out.workflow = root["workflow"];
    if (!out.workflow.IsMap()) spec.fail(out.workflow, "workflow must be a mapping (name, resources, tasks or groups)");
    spec.check_unique_keys(out.workflow, "workflow");
    if (const YAML::Node node = out.workflow["labels"]; node && node.IsMap()) {
      for (const auto& entry : node) {
        if (entry.first.IsScalar() && entry.second.IsScalar()) out.labels[entry.first.Scalar()] = entry.second.Scalar();
      }
    }
    out.tasks = read_tasks(spec, out.workflow);
    out.marked_resources =
        marked_root.IsMap() && marked_root["workflow"].IsMap() ? marked_root["workflow"]["resources"] : YAML::Node();
    out.blocks = read_blocks(spec, out.workflow["resources"], out.tasks);
  } catch (const SpecError& error) {
    std::vector<MissingVariable> on_line;
    for (const MissingVariable& m : out.rendered.missing) {
      if (m.line == error.line) on_line.push_back(m);
    }
    if (!on_line.empty()) throw SpecError{at_line(error.line) + missing_variables_message(on_line), error.line};
    if (out.rendered.undecided.empty()) throw;
    // The rendering chosen for a block check could not decide does not
    // read: the block is the cause to name.
    const Undecided& block = out.rendered.undecided.front();
    throw SpecError{at_line(block.line) + "`" + block.tag + "`: check cannot evaluate it (" + block.problem +
                        "), and rendered without it the spec fails: " + error.message,
                    block.line};
  }
  return out;
}

bool used(const Workflow& workflow, const std::string& block) {
  return std::any_of(workflow.tasks.begin(), workflow.tasks.end(),
                     [&](const TaskRef& task) { return task.resource == block; });
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
                     const Variables& variables, std::vector<std::string>& warnings) {
  const std::string sized = sizing_fingerprint(workflow);
  for (const Undecided& block : workflow.rendered.undecided) {
    for (std::size_t alternative = 1; alternative < block.alternatives; ++alternative) {
      bool same = false;
      try {
        same = sizing_fingerprint(read_workflow(lines, section, variables, {{block.id, alternative}})) == sized;
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

// A --set value only unused blocks read sizes nothing: say so, since the
// user set it to size something (a {% if %} may have left its tasks out).
void warn_unread_set_values(const Workflow& workflow, const std::map<std::string, std::string>& set_values,
                            const OsmoReport& report, std::vector<std::string>& warnings) {
  std::set<std::string> read;
  for (const OsmoBlockReport& block : report.blocks) {
    for (const OsmoFieldSource* source :
         {&block.gpu_source, &block.cpu_source, &block.memory_source, &block.storage_source}) {
      read.insert(source->variable);
    }
  }
  const YAML::Node resources = workflow.workflow["resources"];
  for (const auto& [name, index] : workflow.blocks) {
    if (used(workflow, name) || index == std::string::npos) continue;
    const YAML::Node marked = nth_value(workflow.marked_resources, index);
    if (!marked || !marked.IsMap()) continue;
    for (const auto& entry : marked) {
      if (!entry.second.IsScalar()) continue;
      const std::string variable = field_source(entry.second.Scalar(), workflow.rendered, true).variable;
      if (set_values.count(variable) && !read.count(variable)) {
        warnings.push_back("--set " + variable + ": only resources." + name +
                           " reads it, and no task uses that block with these values (a {% if %} may leave its "
                           "tasks out), so it sizes nothing");
        read.insert(variable);  // once
      }
    }
  }
}

OsmoReport check_spec(const Policy& policy, std::string_view text, const std::map<std::string, std::string>& set_values,
                      bool strict) {
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
      check_version(lines, section);
    } else {
      throw SpecError{at_line(line) + "unknown top-level key " + section.key +
                      " (an OSMO workflow spec has workflow, default-values and version)"};
    }
  }
  if (!workflow_section) throw SpecError{"no top-level workflow: key; this is not an OSMO workflow spec"};

  auto variables = template_variables(lines, defaults_section, set_values);
  if (!variables) throw SpecError{variables.error()};
  const Workflow workflow = read_workflow(lines, *workflow_section, variables.value(), {});
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
    check_undecided(workflow, lines, *workflow_section, variables.value(), report.warnings);
  }

  std::vector<SetPair> pairs;
  const YAML::Node resources = workflow.workflow["resources"];
  for (const auto& [name, index] : workflow.blocks) {
    BlockInput input{policy, variables.value(), spec, name};
    for (const TaskRef& task : workflow.tasks) {
      if (task.resource == name) input.tasks.push_back(task);
    }
    if (input.tasks.empty()) continue;
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
  warn_unread_set_values(workflow, set_values, report, report.warnings);
  return report;
}

}  // namespace
}  // namespace osmo

bool is_osmo_workflow(std::string_view text) {
  bool workflow = false;
  for (const osmo::Section& section : osmo::find_sections(osmo::split_lines(text))) {
    if (section.key == "apiVersion" || section.key == "kind") return false;
    workflow = workflow || section.key == "workflow";
  }
  return workflow;
}

bool OsmoReport::fits() const {
  return std::all_of(blocks.begin(), blocks.end(), [](const OsmoBlockReport& b) { return b.fits(); });
}

Result<OsmoReport> check_osmo_workflow(const Policy& policy, std::string_view text,
                                       const std::map<std::string, std::string>& set_values, bool strict) {
  try {
    return osmo::check_spec(policy, text, set_values, strict);
  } catch (const osmo::SpecError& e) {
    return Status::invalid_argument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::invalid_argument(osmo::at_line(e.mark.line >= 0 ? e.mark.line + 1 : 0) + e.msg);
  }
}

}  // namespace gpusizer
