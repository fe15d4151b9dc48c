// /dev/shm (docs/rules.md "/dev/shm"): the GPU containers of the profiles in
// sharedMemory.profiles need a memory-backed emptyDir at /dev/shm of at
// least sharedMemory.minimum (torchrun and DataLoader workers abort below
// it). Mutate mode adds one of sharedMemory.size, enlarges a smaller one and
// mounts it where it is missing; otherwise the pod is denied. The /dev/shm
// above what the table already holds (sharedMemory.tableIncludes) counts
// against the memory limit, so it raises the app phase's memory floor.
#pragma once

#include "gpusizer/sizing/rule.h"

namespace gpusizer {

class SharedMemoryRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kSharedMemory; }
  Stage stage() const override { return Stage::kFloor; }
  RuleResult evaluate(const RuleInput& input) const override;
};

}  // namespace gpusizer
