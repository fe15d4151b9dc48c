#include "gpusizer/check/osmo/unused_blocks.h"

#include <algorithm>

#include "gpusizer/check/osmo/fields.h"
#include "gpusizer/util/strings.h"

namespace gpusizer::osmo {

namespace {

// The --set variables the block's fields read, gpu first.
std::vector<std::string> set_variables(const Workflow& workflow, std::size_t index,
                                       const std::map<std::string, std::string>& set_values) {
  const YAML::Node marked = nth_value(workflow.marked_resources, index);
  if (!marked || !marked.IsMap()) return {};
  std::map<std::string, std::string> by_field;
  for (const auto& entry : marked) {
    if (!entry.first.IsScalar() || !entry.second.IsScalar()) continue;
    by_field[entry.first.Scalar()] = field_source(entry.second.Scalar(), workflow.rendered, true).variable;
  }
  std::vector<std::string> out;
  for (const char* field : {"gpu", "cpu", "memory", "storage"}) {
    const std::string& variable = by_field[field];
    if (set_values.count(variable) && std::find(out.begin(), out.end(), variable) == out.end()) out.push_back(variable);
  }
  return out;
}

// Renders each skipped branch in turn until one gives tasks using the block.
void find_left_out(UnusedBlock& block, const Workflow& workflow, const std::vector<std::string_view>& lines,
                   const Section& section, const Variables& variables, const YamlBounds& bounds) {
  for (const Skipped& skipped : workflow.rendered.skipped) {
    Workflow forced;
    try {
      forced = read_workflow(lines, section, variables, bounds, {}, {{skipped.id, skipped.branch}});
    } catch (const SpecError&) {
      continue;  // that branch does not read on its own
    }
    for (const TaskRef& task : forced.tasks) {
      if (task.resource == block.name) block.left_out.push_back(task);
    }
    if (block.left_out.empty()) continue;
    block.cause = skipped;
    return;
  }
}

// The suffix OSMO specs give a block's variables: train_gpu, train_cpu...
std::string set_prefix_of(const std::string& variable) {
  for (const char* suffix : {"_gpu", "_cpu", "_memory", "_storage"}) {
    if (variable.ends_with(suffix) && variable.size() > std::string_view(suffix).size())
      return variable.substr(0, variable.size() - std::string_view(suffix).size());
  }
  return "";
}

}  // namespace

std::vector<UnusedBlock> unused_set_blocks(const Workflow& workflow, const std::vector<std::string_view>& lines,
                                           const Section& section, const Variables& variables,
                                           const std::map<std::string, std::string>& set_values,
                                           const YamlBounds& bounds) {
  std::vector<UnusedBlock> out;
  for (const auto& [name, index] : workflow.blocks) {
    if (used(workflow, name) || index == std::string::npos) continue;
    UnusedBlock block{name, index, set_variables(workflow, index, set_values), {}, std::nullopt};
    if (block.set_variables.empty()) continue;
    find_left_out(block, workflow, lines, section, variables, bounds);
    out.push_back(std::move(block));
  }
  return out;
}

ProfileChoice unused_block_profile(const Policy& policy, const UnusedBlock& block) {
  for (const std::string& variable : block.set_variables) {
    const std::string prefix = set_prefix_of(variable);
    for (const auto& [name, profile] : policy.profiles) {
      if (!prefix.empty() && profile.set_prefix == prefix) {
        return {&profile, "no task uses resources." + block.name + " at these values; --set " + variable +
                              " names this profile (setPrefix " + prefix + ")"};
      }
    }
  }
  if (!block.left_out.empty()) return {};
  const Profile* fallback = policy.find_profile(policy.default_profile);
  return {fallback, "no task uses resources." + block.name +
                        " at these values and no profile's setPrefix names its --set variables: the default profile"};
}

std::string unused_block_warning(const UnusedBlock& block) {
  std::string why;
  if (block.cause) {
    std::vector<std::string> tasks;
    for (const TaskRef& task : block.left_out) {
      tasks.push_back(task.group_line ? task.task + " (group " + task.group + ")" : task.task);
    }
    why = " (`" + block.cause->tag + "` at line " + std::to_string(block.cause->line) + " leaves " +
          (tasks.size() == 1 ? "task " : "tasks ") + join(tasks, ", ") + " out)";
  }
  std::vector<std::string> given;
  for (const std::string& variable : block.set_variables) given.push_back("--set " + variable);
  return "resources." + block.name + " is used by no task at these values" + why + "; checked because " +
         join(given, ", ") + (given.size() == 1 ? " was" : " were") + " given";
}

}  // namespace gpusizer::osmo
