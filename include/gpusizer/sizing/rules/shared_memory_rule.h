// /dev/shm (docs/rules.md "/dev/shm"): the GPU containers of the profiles in
// sharedMemory.profiles need a memory-backed emptyDir at /dev/shm of at
// least sharedMemory.minimum (torchrun and DataLoader workers abort below
// it). Mutate mode adds one of sharedMemory.size, enlarges a smaller one and
// mounts it where it is missing; otherwise the pod is denied. The /dev/shm
// above what the table already holds (sharedMemory.tableIncludes) counts
// against the memory limit, so it raises the app phase's memory floor.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/sizing/rule.h"

namespace gpusizer {

// /dev/shm for torchrun and DataLoader workers: a memory-backed emptyDir on
// the GPU containers of these profiles (seed 000, docs/sources.md).
struct ShmSizes {
  Quantity minimum;         // below it: enforce denies, mutate enlarges to `size`
  Quantity size;            // what mutate adds, or enlarges a too-small one to
  Quantity table_includes;  // /dev/shm the table's memory already holds
  bool serving = false;     // the serving sizes (sharedMemory.serving)
};

// Inference servers: only tensor-parallel pods (fromGpus GPUs or more),
// whose NCCL moves data between GPUs through /dev/shm, need it, and less
// than training does (docs/rules.md "/dev/shm").
struct ShmServingPolicy {
  std::vector<std::string> profiles;
  int64_t from_gpus = 2;
  ShmSizes sizes;
};

struct SharedMemoryPolicy {
  std::vector<std::string> profiles;
  Quantity minimum;         // below it: enforce denies, mutate enlarges to `size`
  Quantity size;            // what mutate adds, or enlarges a too-small one to
  Quantity table_includes;  // /dev/shm the table's memory already holds
  std::string volume_name;  // the volume mutate adds
  ShmServingPolicy serving;

  // The policy block sharedMemory (rule_settings.h).
  static constexpr std::string_view kKey = "sharedMemory";
  void read(const YAML::Node& node, bool complete);
  // Both profile lists name profiles.
  static void finish(Policy& policy, const YAML::Node& root);

  // The sizes for a pod of `profile` with `gpus` GPUs; nullopt: its
  // /dev/shm is not checked.
  std::optional<ShmSizes> sizes_for(std::string_view profile, int64_t gpus) const;
};

class SharedMemoryRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kSharedMemory; }
  Stage stage() const override { return Stage::kFloor; }
  RuleResult evaluate(const RuleInput& input) const override;
  const SettingsBlock* settings() const override;
};

}  // namespace gpusizer
