// Resource blocks no task uses at the values given but whose fields read a
// variable the user passed with --set: a user who passes a sizing value
// means to run what it sizes (NVIDIA's specs gate a finetune group on
// `{% if use_pretrained_checkpoint ... %}` and say to run them with
// `--set train_gpu=4 ...`), so such a block is still checked, with the
// profile the variable's prefix names, and a warning says why.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/check/osmo/checker.h"
#include "gpusizer/check/osmo/workflow.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"

namespace gpusizer::osmo {

struct UnusedBlock {
  std::string name;   // its key in workflow.resources
  std::size_t index;  // its position there
  // The --set variables its gpu, cpu, memory and storage read, in that order.
  std::vector<std::string> set_variables;
  // The tasks that would use it, and the {% if %} tag that leaves them out,
  // when rendering one branch the values decided against gives them.
  std::vector<TaskRef> left_out;
  std::optional<Skipped> cause;
};

// The blocks of the rendering no task uses and whose fields read one of
// `set_values`, each with the tasks left out when a rendering of one
// skipped {% if %} branch finds them.
std::vector<UnusedBlock> unused_set_blocks(const Workflow& workflow, const std::vector<std::string_view>& lines,
                                           const Section& section, const Variables& variables,
                                           const std::map<std::string, std::string>& set_values,
                                           const YamlBounds& bounds);

// The profile to size the block with: the one whose setPrefix is the prefix
// of its first --set variable (train_gpu: train), else the left-out tasks'
// (profile null: choose by their labels), else the policy's default.
ProfileChoice unused_block_profile(const Policy& policy, const UnusedBlock& block);

// "resources.gpu-train is used by no task at these values (`{% if ... %}`
// at line 340 leaves task finetune (group finetune-job) out); checked
// because --set train_gpu was given".
std::string unused_block_warning(const UnusedBlock& block);

}  // namespace gpusizer::osmo
