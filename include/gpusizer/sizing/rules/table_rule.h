// The GPU table (seed 000, docs/rules.md "The table"): each phase of a pod
// needs the profile's row for its GPUs of cpu, memory and
// ephemeral-storage; a profile's maxGpus caps single-pod stages.
#pragma once

#include "gpusizer/sizing/rule.h"

namespace gpusizer {

class TableRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kTable; }
  Stage stage() const override { return Stage::kFloor; }
  RuleResult evaluate(const RuleInput& input) const override;
};

}  // namespace gpusizer
