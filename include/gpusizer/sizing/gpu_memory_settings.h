// The settings of the GPU memory rule (rules/gpu_memory_rule.h), which the
// offload rule and the model annotation's reader share: the policy block
// gpuMemory, with its GPU models and model shapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// One GPU model: the product label values it matches (globs) and its memory.
struct GpuModel {
  std::string name;
  Quantity memory;
  std::vector<std::string> match;
};

// A model's shape, as its config.json gives it (docs/gpu-memory.md "Model
// shapes"): what the KV cache, a LoRA adapter of a given rank, activations
// from batch and sequence, and DeepSpeed's ZeRO-3 gathered layer are
// worked out from.
struct ModelShape {
  std::string name;
  int64_t params = 0;  // the published count
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate = 0;  // the MLP's inner size (per expert)
  int64_t vocab = 0;
  int64_t experts = 1;        // MoE experts per layer; 1: dense
  int64_t largest_layer = 0;  // parameters of the largest single module (DeepSpeed's largest layer)
};

// What an optimizer keeps per trainable parameter on the GPU, and how much
// of it may page out to host memory (bitsandbytes' paged optimizers).
struct OptimizerCost {
  Milli bytes = 0;
  Milli pageable = 0;
};

// GPU memory (VRAM) fit, from the annotation gpu-sizer.io/model (seeds 002-004).
struct GpuMemoryPolicy {
  CheckAction action = CheckAction::kDeny;
  Milli safety_margin = 0;                  // usable share of a GPU's memory
  std::string product_label;                // node label naming the GPU model
  std::vector<std::string> infer_profiles;  // mode=infer by default for these
  int64_t max_suggested_gpus = 8;
  std::map<std::string, Milli, std::less<>> precision_bytes;  // per parameter
  Quantity context_bytes_per_token;                           // inference: the KV cache per token of context
  Quantity overhead;                                          // per GPU: CUDA context and framework kernels
  // Training (docs/gpu-memory.md): per trainable parameter, each
  // optimizer's state (mixed-precision Adam: fp32 master weights and two moments);
  // per parameter, QLoRA's 4-bit base weights with their quantization
  // constants; the share of the parameters an adapter trains when its rank
  // and the model's shape are not given; per parameter, the activation
  // allowance of each method (full, lora, qlora).
  std::map<std::string, OptimizerCost, std::less<>> optimizers;  // "adamw" is the default
  Milli quantized_bytes = 0;
  Milli adapter_share = 0;
  std::map<std::string, Milli, std::less<>> activation_bytes;
  std::vector<GpuModel> gpus;      // first match wins
  std::vector<ModelShape> models;  // model=NAME; names are unique

  // The policy block gpuMemory (rule_settings.h).
  static constexpr std::string_view kKey = "gpuMemory";
  void read(const YAML::Node& node, bool complete);
  // Every gpuMemory.inferProfiles entry names a profile.
  static void finish(Policy& policy, const YAML::Node& root);

  // The entry named `name` exactly, else the first whose glob matches it;
  // nullptr when none does.
  const GpuModel* find_gpu(std::string_view name_or_product) const;
  // The model named `name`, or nullptr.
  const ModelShape* find_model(std::string_view name) const;
};

}  // namespace gpusizer
