// The workflow section of an OSMO spec rendered with the variables and read
// as OSMO reads it: its tasks (flat or in groups), each with its resource
// block, its labels, and its resource blocks in file order.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpusizer/check/osmo/checker.h"
#include "gpusizer/check/osmo/renderer.h"
#include "gpusizer/check/osmo/spec.h"

namespace gpusizer::osmo {

struct Workflow {
  Rendered rendered;
  YAML::Node workflow;
  YAML::Node marked_resources;
  std::map<std::string, std::string, std::less<>> labels;
  std::vector<TaskRef> tasks;
  // The resource blocks in file order, each with its index in
  // workflow.resources (npos for OSMO's implicit `default: {}` when the key
  // is absent).
  std::vector<std::pair<std::string, std::size_t>> blocks;
  SpecLines spec() const { return SpecLines{&rendered}; }
};

// Renders the section (`choices` and `forced` as render takes them) and
// reads it. Throws SpecError on what OSMO refuses: a workflow that is not a
// mapping, tasks and groups together or neither, a task without a name, a
// resource name workflow.resources lacks. A failure on a line where a
// variable has no value names that variable: the placeholder it rendered as
// is what failed; one after a block check could not decide names the block.
// Each rendering is read within `bounds` (a loop can render far more YAML
// than the file holds).
Workflow read_workflow(const std::vector<std::string_view>& lines, const Section& section, const Variables& variables,
                       const YamlBounds& bounds, const BlockChoices& choices = {}, const ForcedBranches& forced = {});

// Whether a task of the rendering uses the block.
bool used(const Workflow& workflow, const std::string& block);

}  // namespace gpusizer::osmo
