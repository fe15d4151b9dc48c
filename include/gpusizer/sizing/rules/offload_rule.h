// Offload (docs/gpu-memory.md "Offload"): a pod whose annotation
// gpu-sizer.io/model offloads to host memory (offload=optimizer or all)
// needs that memory on top of its profile table's: the memory floor of its
// app phase grows by what DeepSpeed keeps there for its GPUs.
#pragma once

#include "gpusizer/sizing/rule.h"

namespace gpusizer {

class OffloadRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kOffload; }
  Stage stage() const override { return Stage::kFloor; }
  RuleResult evaluate(const RuleInput& input) const override;
};

}  // namespace gpusizer
