// Reading the rendered workflow section: its tasks and resource blocks
// (workflow.h).
#include "gpusizer/check/osmo/workflow.h"

#include <algorithm>
#include <utility>

#include "gpusizer/check/osmo/scanner.h"
#include "gpusizer/util/strings.h"

namespace gpusizer::osmo {

namespace {

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

}  // namespace

Workflow read_workflow(const std::vector<std::string_view>& lines, const Section& section, const Variables& variables,
                       const YamlBounds& bounds, const BlockChoices& choices, const ForcedBranches& forced) {
  auto rendered = render(padded_section(lines, section), variables, choices, forced);
  if (!rendered) throw SpecError{rendered.error()};
  Workflow out;
  out.rendered = std::move(rendered).value();
  try {
    const SpecLines spec = out.spec();
    YAML::Node root;
    try {
      YamlBudget budget{bounds};
      root = load_yaml(out.rendered.text, budget);
    } catch (const YAML::ParserException& e) {
      const auto index = static_cast<std::size_t>(std::max(0, e.mark.line));
      const int line = index < out.rendered.file_line.size() ? out.rendered.file_line[index] : e.mark.line + 1;
      throw SpecError{at_line(line) + "YAML error after rendering: " + e.msg, line};
    }
    YAML::Node marked_root;
    try {
      YamlBudget budget{bounds};
      marked_root = load_yaml(out.rendered.marked, budget);
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

}  // namespace gpusizer::osmo
