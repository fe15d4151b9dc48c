// Sizing the resource blocks of a rendered OSMO workflow spec against the
// policy: per block, the profile its tasks' pods would get, its GPU count,
// what its cpu, memory and storage must be, the findings, and the --set
// values that make it fit.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpusizer/check/osmo/spec.h"
#include "gpusizer/check/osmo/values.h"
#include "gpusizer/check/osmo_workflow.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/result.h"

namespace gpusizer::osmo {

// A task of the workflow and the resource block it uses.
struct TaskRef {
  std::string task, group, resource;
  int line = 0;  // of the task's name
  YAML::Node node;
  int group_line = 0;  // of its group's name; 0 in a flat tasks list
};

// A --set value a block needs.
struct SetPair {
  std::string variable, value, block;
  bool gpu = false;  // the pair sets a block's GPU count
};

struct BlockInput {
  const Policy& policy;
  const Variables& variables;
  const SpecLines& spec;
  std::string name;            // the block's key in workflow.resources
  YAML::Node block;            // its fields, rendered; undefined for OSMO's implicit `default: {}`
  YAML::Node marked_block;     // the same from the marked rendering
  std::vector<TaskRef> tasks;  // the tasks using it, in file order
  std::map<std::string, std::string, std::less<>> labels;  // workflow.labels
  // A block no task uses, checked for a --set value it reads: the profile
  // to size it with (null: choose by `tasks`, the tasks left out) and why.
  bool used = true;
  const Profile* profile = nullptr;
  std::string profile_reason;
};

// Sizes one block and appends the --set values it needs to `pairs`. Fails,
// naming the line, on values OSMO rejects (a gpu that is not a whole
// number, cpu with a unit, memory or storage in decimal units) and on
// unknown or repeated fields.
Result<OsmoBlockReport> check_block(const BlockInput& input, std::vector<SetPair>& pairs);

// The --set line: the blocks' pairs, one per variable (the larger value
// when blocks share a variable; a finding on the block when they need
// different GPU counts from it), then the user's other --set values,
// shell-quoted where needed.
std::string set_line(const std::vector<SetPair>& pairs, const std::map<std::string, std::string>& set_values,
                     std::vector<OsmoBlockReport>& blocks);

}  // namespace gpusizer::osmo
