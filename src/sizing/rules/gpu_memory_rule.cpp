#include "gpusizer/sizing/rules/gpu_memory_rule.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// One GPU model the pod may run on: its product name, where it came from,
// and its memory when a node label gives it (it wins over the table).
struct GpuProduct {
  std::string product;
  std::string source;
  int64_t memory_bytes = 0;
};

// The one GPU every node the pod may be placed on has, from their labels
// (the pool's gpuProduct for pools); nullopt when they differ or say
// nothing. Nodes without the pod's GPU resource (CPU nodes it tolerates)
// have nothing to say about its GPU.
std::optional<GpuProduct> candidates_gpu(const Candidates& candidates) {
  std::vector<const NodeClass*> gpu_nodes;
  const bool by_claim = candidates.gpu_resource == kClaimedGpus;
  for (const NodeClass* node : candidates.placeable) {
    // GPUs by DRA claim are in no allocatable: the nodes labelled with one.
    if (by_claim ? !node->gpu.product.empty() : node->count(candidates.gpu_resource) > 0) gpu_nodes.push_back(node);
  }
  if (gpu_nodes.empty()) return std::nullopt;
  const NodeGpu& first = gpu_nodes.front()->gpu;
  const bool same =
      std::all_of(gpu_nodes.begin(), gpu_nodes.end(), [&](const NodeClass* node) { return node->gpu == first; });
  if (!same || first.product.empty()) return std::nullopt;
  if (candidates.inventory->source == InventorySource::kPools) {
    if (!candidates.pool) return std::nullopt;  // every pool's shapes: only a pool the pod names tells its GPU
    return GpuProduct{first.product, "node pool " + in_quotes(candidates.pool->name)};
  }
  std::string source = (first.from_slice ? "" : "node label ") + first.product_label + "=" + first.product;
  if (first.memory_bytes > 0) source += ", " + first.memory_label;
  return GpuProduct{first.product, source + " of every node it may run on", first.memory_bytes};
}

// The GPU models the pod may run on: what the scheduler enforces first
// (nodeSelector, then required node affinity), then the annotation
// gpu-sizer.io/gpu, then what the nodes it may run on say (their labels,
// or the pod's node pool).
std::vector<GpuProduct> gpu_products(const RuleInput& input) {
  const PodFacts& pod = input.pod;
  const std::string& label = input.policy.rule_settings.get<GpuMemoryPolicy>().product_label;
  if (const std::string* product = pod.node_selector_value(label)) {
    return {{*product, "nodeSelector " + label + "=" + *product}};
  }
  std::vector<GpuProduct> products;
  for (const auto& product : pod.affinity_source().affinity_products) {
    products.push_back({product, "node affinity " + label + " In " + product});
  }
  if (!products.empty()) return products;
  if (const std::string* gpu = pod.annotation(kGpuKey)) {
    // A product is a label value, at most 63 bytes: a longer one names no
    // GPU, and is cut (each of a workflow's templates may say it).
    const std::string product = truncate_utf8(*gpu, 63);
    return {{product, std::string("annotation ") + kGpuKey + "=" + product}};
  }
  if (input.candidates) {
    if (auto gpu = candidates_gpu(*input.candidates)) products.push_back(std::move(*gpu));
  }
  return products;
}

// explain's rows of a check: each part in GiB per GPU (host: per pod).
std::vector<RulePart> rule_parts(const VramCheck& check) {
  std::vector<RulePart> parts;
  for (const VramPart& part : check.parts) {
    const std::string per = part.kind == "host" ? " per pod" : part.kind == "gpu" ? "" : "/GPU";
    const std::string kind = part.kind == "certain" || part.kind == "allowance" ? " " + part.kind : "";
    parts.push_back({part.name, part.kind, part.bytes, gib_text(part.bytes) + per + kind, part.formula});
  }
  return parts;
}

}  // namespace

std::optional<Result<ModelSpec>> annotated_model(const RuleInput& input) {
  const std::string* annotation = input.pod.annotation(kModelKey);
  const Phase* app = input.phases.app();
  if (!annotation || !app) return std::nullopt;
  const GpuMemoryPolicy& rule = input.policy.rule_settings.get<GpuMemoryPolicy>();
  const bool infer = std::find(rule.infer_profiles.begin(), rule.infer_profiles.end(), input.profile.name) !=
                     rule.infer_profiles.end();
  auto spec = parse_model(*annotation, rule, infer ? ModelMode::kInfer : ModelMode::kTrain, app->gpus);
  if (spec && spec.value().mode == ModelMode::kInfer) {
    // vLLM's flags say what the annotation does not: its share of the GPU,
    // and the parallelism it splits the model with (when the annotation
    // gives none and the pod's GPUs allow it).
    ModelSpec& model = spec.value();
    const bool parallel_given = model.tp > 1 || model.pp > 1;
    for (const ContainerFacts* holder : app->holders) {
      if (holder->gpu_memory_utilization > 0) model.reserved_share = holder->gpu_memory_utilization;
      if (!parallel_given && holder->tensor_parallel > 1 && app->gpus % holder->tensor_parallel == 0) {
        model.tp = holder->tensor_parallel;
      }
      if (!parallel_given && holder->pipeline_parallel > 1) model.pp = holder->pipeline_parallel;
    }
  }
  return spec;
}

RuleResult GpuMemoryRule::evaluate(const RuleInput& input) const {
  RuleResult result;
  const PodFacts& pod = input.pod;
  auto explain = [&](std::string floor, std::string detail, std::vector<RulePart> parts = {}) {
    if (input.explain)
      result.row = RuleRow{RuleKind::kGpuMemory, std::move(floor), std::move(detail), std::move(parts)};
  };
  const std::optional<Result<ModelSpec>> annotated = annotated_model(input);
  if (!annotated) {
    explain("-",
            !pod.annotation(kModelKey) ? std::string("no annotation ") + kModelKey : "no app container holds GPUs");
    return result;
  }
  const Phase* app = input.phases.app();
  const GpuMemoryPolicy& rule = input.policy.rule_settings.get<GpuMemoryPolicy>();
  const Result<ModelSpec>& spec = *annotated;
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
  for (const GpuProduct& product : gpu_products(input)) {
    const bool mig = product.product.find("-MIG-") != std::string::npos;
    if (mig) {
      // A single-strategy MIG node's nvidia.com/gpu is a slice: the GPU
      // memory is the profile's (NVIDIA's product label ends
      // -MIG-<slices>g.<memory>gb), in GB as the profile names it.
      if (const auto slice = mig_profile(product.product)) {
        const GpuModel sliced{product.product, Quantity::from_bytes(slice->memory_gb * 1'000'000'000), {}};
        checks.push_back(check_vram(rule, spec.value(), app->gpus, sliced, product.source));
      } else {
        unknown.push_back(product.product);
      }
      continue;
    }
    if (product.memory_bytes > 0) {
      // A node label gives the memory: it wins over the table's.
      const GpuModel* listed = rule.find_gpu(product.product);
      const GpuModel labelled{listed ? listed->name : product.product, Quantity::from_bytes(product.memory_bytes), {}};
      checks.push_back(check_vram(rule, spec.value(), app->gpus, labelled, product.source));
      continue;
    }
    const GpuModel* gpu = rule.find_gpu(product.product);
    if (!gpu) {
      unknown.push_back(product.product);
    } else if (std::find(checked.begin(), checked.end(), gpu) == checked.end()) {
      checked.push_back(gpu);
      checks.push_back(check_vram(rule, spec.value(), app->gpus, *gpu, product.source));
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
  explain(gb_text(shown.need.total) + " GB per GPU", shown.message + ranks_hint, rule_parts(shown));
  return result;
}

const SettingsBlock* GpuMemoryRule::settings() const {
  static const SettingsBlockOf<GpuMemoryPolicy> block;
  return &block;
}

}  // namespace gpusizer
