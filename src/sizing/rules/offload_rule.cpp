#include "gpusizer/sizing/rules/offload_rule.h"

#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/sizing/rules/gpu_memory_rule.h"
#include "gpusizer/sizing/sizing.h"

namespace gpusizer {

RuleResult OffloadRule::evaluate(const RuleInput& input) const {
  RuleResult result;
  const Phase* app = input.phases.app();
  auto explain = [&](std::string floor, std::string detail) {
    if (input.explain && app) result.row = RuleRow{RuleKind::kOffload, std::move(floor), std::move(detail)};
  };
  const std::optional<Result<ModelSpec>> model = annotated_model(input);
  // A malformed annotation is the GPU memory rule's finding, said once.
  if (!model || !*model || model->value().mode != ModelMode::kTrain || model->value().offload == Offload::kNone) {
    explain("-", std::string("no offload in annotation ") + kModelKey);
    return result;
  }
  const ModelSpec& spec = model->value();
  const VramNeed need = vram_per_gpu(input.policy.rule_settings.get<GpuMemoryPolicy>(), spec, app->gpus);
  if (need.host == 0) {
    explain("-", "offload=" + std::string(offload_name(spec.offload)) + " keeps its state off host memory");
    return result;
  }
  const int128 host = int128(need.host) * app->gpus;
  const auto table = required_resources(input.profile, app->gpus);
  const int128 table_bytes = table ? int128(table->memory.value_ceil()) : 0;
  // Whole Gi, as the tables write memory; far above any node it is the node
  // caps rule's to lower, with the arithmetic.
  const Quantity floor = Quantity::from_bytes(clamp_to_int64(ceil_div(table_bytes + host, kGiB) * kGiB));
  // In GiB, as the table's Gi, so a reader can add them up.
  const std::string offloaded = "offload=" + std::string(offload_name(spec.offload)) + " keeps " + gib_text(need.host) +
                                " per GPU in host memory x " + std::to_string(app->gpus) +
                                " GPUs = " + gib_text(clamp_to_int64(host));
  const std::string detail =
      offloaded + (table ? " + " + input.profile.name + " table " + table->memory.to_string() : "");
  result.floors.push_back(
      {0, kMemory, floor, "offload", "offload: " + detail,
       fit(input.pod.label + "offload memory floor " + floor.to_string() + " = " + detail + " (" + kModelKey + ")")});
  explain("memory " + floor.to_string(), detail);
  return result;
}

}  // namespace gpusizer
