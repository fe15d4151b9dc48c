// GPU memory (seeds 002-004, docs/rules.md "GPU memory"): the model a pod
// annotated gpu-sizer.io/model trains or serves, against the memory of
// each GPU model it may be scheduled on (model_fit.h). Denied only when it
// fits none of them and every one is known; warned about when tight.
#pragma once

#include "gpusizer/sizing/rule.h"

namespace gpusizer {

class GpuMemoryRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kGpuMemory; }
  Stage stage() const override { return Stage::kCheck; }
  RuleResult evaluate(const RuleInput& input) const override;
};

}  // namespace gpusizer
