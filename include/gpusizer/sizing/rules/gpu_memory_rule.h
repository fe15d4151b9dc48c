// GPU memory (seeds 002-004, docs/rules.md "GPU memory"): the model a pod
// annotated gpu-sizer.io/model trains or serves, against the memory of
// each GPU model it may be scheduled on (model_fit.h). Denied only when it
// fits none of them and every one is known; warned about when tight.
#pragma once

#include <optional>

#include "gpusizer/sizing/gpu_memory_settings.h"
#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/sizing/rule.h"

namespace gpusizer {

// The model the pod's annotation gpu-sizer.io/model describes, in the mode
// its profile implies (gpuMemory.inferProfiles: infer), with vLLM's
// --gpu-memory-utilization from its app containers; nullopt when it has no
// annotation or no app phase. The offload rule reads it too.
std::optional<Result<ModelSpec>> annotated_model(const RuleInput& input);

class GpuMemoryRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kGpuMemory; }
  Stage stage() const override { return Stage::kCheck; }
  RuleResult evaluate(const RuleInput& input) const override;
  const SettingsBlock* settings() const override;
};

}  // namespace gpusizer
