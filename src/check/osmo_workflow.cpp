#include "gpusizer/check/osmo_workflow.h"

#include <algorithm>
#include <set>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "gpusizer/check/osmo/checker.h"
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
  auto read_task = [&](const YAML::Node& node, const std::string& path, const std::string* group) {
    if (!node.IsMap()) spec.fail(node, path + " must be a mapping");
    const YAML::Node name = node["name"];
    if (!name || !name.IsScalar() || name.Scalar().empty()) spec.fail(node, path + " has no name");
    TaskRef task;
    task.task = name.Scalar();
    task.group = group ? *group : task.task + "-group";
    task.line = spec.line_of(name);
    task.node = node;
    const YAML::Node resource = node["resource"];
    task.resource = resource && !resource.IsNull() ? spec.scalar_text(resource, path + ".resource") : "default";
    tasks.push_back(task);
  };
  if (flat) {
    if (!flat.IsSequence()) spec.fail(flat, "workflow.tasks must be a list");
    for (std::size_t t = 0; t < flat.size(); ++t)
      read_task(flat[t], "workflow.tasks[" + std::to_string(t) + "]", nullptr);
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
      read_task(group_tasks[t], path + ".tasks[" + std::to_string(t) + "]", &group_name);
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

OsmoReport check_spec(const Policy& policy, std::string_view text,
                      const std::map<std::string, std::string>& set_values) {
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
  auto rendered_result = render(padded_section(lines, *workflow_section), variables.value());
  if (!rendered_result) throw SpecError{rendered_result.error()};
  const Rendered& rendered = rendered_result.value();
  const SpecLines spec{&rendered};

  YAML::Node root;
  try {
    root = YAML::Load(rendered.text);
  } catch (const YAML::ParserException& e) {
    const auto index = static_cast<std::size_t>(std::max(0, e.mark.line));
    const int line = index < rendered.file_line.size() ? rendered.file_line[index] : e.mark.line + 1;
    throw SpecError{at_line(line) + "YAML error after rendering: " + e.msg};
  }
  YAML::Node marked_root;
  try {
    marked_root = YAML::Load(rendered.marked);
  } catch (const YAML::Exception&) {
    marked_root = YAML::Node();  // sources then read as literal
  }

  const YAML::Node workflow = root["workflow"];
  if (!workflow.IsMap()) spec.fail(workflow, "workflow must be a mapping (name, resources, tasks or groups)");
  spec.check_unique_keys(workflow, "workflow");

  std::map<std::string, std::string, std::less<>> labels;
  if (const YAML::Node node = workflow["labels"]; node && node.IsMap()) {
    for (const auto& entry : node) {
      if (entry.first.IsScalar() && entry.second.IsScalar()) labels[entry.first.Scalar()] = entry.second.Scalar();
    }
  }
  const std::vector<TaskRef> tasks = read_tasks(spec, workflow);
  const YAML::Node resources = workflow["resources"];
  const YAML::Node marked_resources =
      marked_root.IsMap() && marked_root["workflow"].IsMap() ? marked_root["workflow"]["resources"] : YAML::Node();

  OsmoReport report;
  std::vector<SetPair> pairs;
  for (const auto& [name, index] : read_blocks(spec, resources, tasks)) {
    BlockInput input{policy, variables.value(), spec, name};
    for (const TaskRef& task : tasks) {
      if (task.resource == name) input.tasks.push_back(task);
    }
    if (input.tasks.empty()) continue;
    if (index != std::string::npos) {
      input.block = nth_value(resources, index);
      input.marked_block = nth_value(marked_resources, index);
    }
    input.labels = labels;
    auto block = check_block(input, pairs);
    if (!block) throw SpecError{block.error()};
    report.blocks.push_back(std::move(block).value());
  }
  report.set_line = set_line(pairs, set_values, report.blocks);
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
                                       const std::map<std::string, std::string>& set_values) {
  try {
    return osmo::check_spec(policy, text, set_values);
  } catch (const osmo::SpecError& e) {
    return Status::invalid_argument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::invalid_argument(osmo::at_line(e.mark.line >= 0 ? e.mark.line + 1 : 0) + e.msg);
  }
}

}  // namespace gpusizer
