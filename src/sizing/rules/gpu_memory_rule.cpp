#include "gpusizer/sizing/rules/gpu_memory_rule.h"

#include <algorithm>
#include <utility>

#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// The GPU models the pod may run on, with where each came from: what the
// scheduler enforces first (nodeSelector, then required node affinity),
// then the annotation gpu-sizer.io/gpu, then the pod's node pool.
std::vector<std::pair<std::string, std::string>> gpu_products(const RuleInput& input) {
  const PodFacts& pod = input.pod;
  const std::string& label = input.policy.gpu_memory.product_label;
  if (auto product = pod.node_selector.find(label); product != pod.node_selector.end()) {
    return {{product->second, "nodeSelector " + label + "=" + product->second}};
  }
  std::vector<std::pair<std::string, std::string>> products;
  for (const auto& product : pod.affinity_products) {
    products.emplace_back(product, "node affinity " + label + " In " + product);
  }
  if (!products.empty()) return products;
  if (const std::string* gpu = pod.annotation(kGpuKey)) {
    return {{*gpu, std::string("annotation ") + kGpuKey + "=" + *gpu}};
  }
  const NodePool* pool = pod_pool(input.policy.node_fit, pod.selection.labels, pod.node_selector);
  if (pool && !pool->gpu_product.empty()) products.emplace_back(pool->gpu_product, "node pool \"" + pool->name + "\"");
  return products;
}

}  // namespace

RuleResult GpuMemoryRule::evaluate(const RuleInput& input) const {
  RuleResult result;
  const PodFacts& pod = input.pod;
  auto explain = [&](std::string floor, std::string detail) {
    if (input.explain) result.row = RuleRow{RuleKind::kGpuMemory, std::move(floor), std::move(detail)};
  };
  const std::string* annotation = pod.annotation(kModelKey);
  const Phase* app = input.phases.app();
  if (!annotation || !app) {
    explain("-", !annotation ? std::string("no annotation ") + kModelKey : "no app container holds GPUs");
    return result;
  }
  const GpuMemoryPolicy& rule = input.policy.gpu_memory;
  const bool infer = std::find(rule.infer_profiles.begin(), rule.infer_profiles.end(), input.profile.name) !=
                     rule.infer_profiles.end();
  auto spec = parse_model(*annotation, rule, infer ? ModelMode::kInfer : ModelMode::kTrain, app->gpus);
  if (!spec) {
    // A check: it changes no patch, so it does not stop mutation.
    const std::string problem = pod.description + ": annotation " + kModelKey + " " + spec.error();
    result.findings.push_back({DenialReason::kInvalid, true, problem, problem});
    explain("-", problem);
    return result;
  }
  std::vector<VramCheck> checks;
  std::vector<const GpuModel*> checked;  // each model once, however often affinity lists it
  std::vector<std::string> unknown;
  for (const auto& [product, source] : gpu_products(input)) {
    const GpuModel* gpu = product.find("-MIG-") == std::string::npos ? rule.find_gpu(product) : nullptr;
    if (!gpu) {
      unknown.push_back(product);
    } else if (std::find(checked.begin(), checked.end(), gpu) == checked.end()) {
      checked.push_back(gpu);
      checks.push_back(check_vram(rule, spec.value(), app->gpus, *gpu, source));
    }
  }
  if (checks.empty()) {
    const std::string note = unknown.empty()
                                 ? "model not checked: GPU model unknown; set nodeSelector " + rule.product_label +
                                       " or annotation " + kGpuKey
                                 : "model not checked: GPU " + in_quotes(unknown.front()) + " is not in gpuMemory.gpus";
    result.findings.push_back({DenialReason::kVram, false, "", fit(pod.label + note)});
    explain("-", note);
    return result;
  }
  const auto fits = [](const VramCheck& check) { return check.verdict == VramVerdict::kFits; };
  const auto too_large = [](const VramCheck& check) { return check.verdict == VramVerdict::kTooLarge; };
  auto worst = std::find_if(checks.begin(), checks.end(), too_large);
  if (worst == checks.end()) worst = std::find_if_not(checks.begin(), checks.end(), fits);
  // A job spanning pods shards ZeRO over all of their GPUs, which this pod
  // alone does not show.
  const ModelSpec& model = spec.value();
  const std::string ranks_hint =
      model.mode == ModelMode::kTrain && model.zero > 0 && model.ranks == 0
          ? " If the job spans several pods, set ranks=<total GPUs> in " + std::string(kModelKey) + "."
          : "";
  if (std::all_of(checks.begin(), checks.end(), too_large) && unknown.empty() && rule.action == CheckAction::kDeny) {
    result.findings.push_back({DenialReason::kVram, true, pod.description + ": " + checks.front().message + ranks_hint,
                               pod.label + checks.front().brief});
  } else if (worst != checks.end()) {
    result.findings.push_back({DenialReason::kVram, false, "", fit(pod.label + worst->brief)});
  }
  const VramCheck& shown = worst != checks.end() ? *worst : checks.front();
  explain(gb_text(shown.need.total) + " GB per GPU", shown.message + ranks_hint);
  return result;
}

}  // namespace gpusizer
