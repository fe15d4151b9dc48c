// GPU memory (VRAM) fit of a model, from the annotation gpu-sizer.io/model
// (design docs/plans/issue-8-design.md section 2.3; seeds 002, 003, 004).
// Pure: plain structs in and out, exact integer arithmetic, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

// The annotation describing the model a pod trains or serves:
// "params=7B,context=16k,precision=bf16,method=full,zero=0,mode=train".
inline constexpr const char* kModelKey = "gpu-sizer.io/model";
// The annotation naming the pod's GPU model (a gpuMemory.gpus name or a
// product label value); it wins over the nodeSelector.
inline constexpr const char* kGpuKey = "gpu-sizer.io/gpu";

enum class TrainingMethod { kFull, kLora, kQlora };
enum class ModelMode { kTrain, kInfer };

struct ModelSpec {
  int64_t params = 0;
  int64_t context_tokens = 0;  // inference only; training ignores it
  std::string precision = "bf16";
  TrainingMethod method = TrainingMethod::kFull;
  int zero = 0;  // DeepSpeed ZeRO stage, 0..3
  ModelMode mode = ModelMode::kTrain;
  int64_t ranks = 0;  // training world size; 0: the pod's GPUs
  int64_t tp = 1;     // inference tensor-parallel degree
};

// Parses the annotation's value. `default_mode` applies when it has no
// `mode` (infer for gpuMemory.inferProfiles); `pod_gpus` bounds `ranks` and
// `tp`. Errors name the part and the problem, `part "zero=4": must be 0, 1,
// 2 or 3`, and read after the caller's `pod X: annotation gpu-sizer.io/model `.
Result<ModelSpec> parse_model(std::string_view text, const GpuMemoryPolicy& policy, ModelMode default_mode,
                              int64_t pod_gpus);

// Bytes one GPU holds, each part rounded up; `certain` and `total` are
// computed from the exact sums, so they can be a few bytes below the sums of
// the rounded parts. Training fills weights, gradients and optimizer (the
// certain part: they cannot shrink without changing the method, the
// sharding or the GPUs) and the allowances, activations and overhead;
// inference fills weights (certain), context and overhead.
struct VramNeed {
  int64_t total = 0;
  int64_t certain = 0;
  int64_t weights = 0;
  int64_t optimizer = 0;
  int64_t gradients = 0;
  int64_t activations = 0;
  int64_t context = 0;
  int64_t overhead = 0;
};

// The need per GPU of `spec` on a pod with `gpus` GPUs (the training world
// size unless spec.ranks is set).
VramNeed vram_per_gpu(const GpuMemoryPolicy& policy, const ModelSpec& spec, int64_t gpus);

enum class VramVerdict {
  kFits,      // the total within safetyMargin x capacity
  kTight,     // the total over the safety margin, the certain part within the capacity: may run out of memory
  kTooLarge,  // the certain part over the capacity: cannot run
};

// "full", "lora", "qlora", as the annotation writes the method.
std::string_view method_name(TrainingMethod method);

// N: the GPUs the model is spread over. Training shards over its world
// size, which `ranks` sets for jobs spanning pods; inference runs per pod.
int64_t world_size(const ModelSpec& spec, int64_t gpus);

// K: options never suggest more GPUs than this, max(maxSuggestedGpus, world).
int64_t most_suggested_gpus(const GpuMemoryPolicy& policy, int64_t world);

// A need against a GPU of `capacity` bytes.
VramVerdict verdict_of(const GpuMemoryPolicy& policy, const VramNeed& need, int64_t capacity);

// One change that was tried: the annotation parts to change ("method=lora,zero=3",
// empty when only the GPUs change) on `gpus` GPUs of `gpu_memory` each.
struct VramOption {
  std::string change;
  int64_t gpus = 0;
  Quantity gpu_memory;
  std::vector<std::string> gpu_names;  // the pod's model, or every table model of a larger size
  int64_t bytes_per_gpu = 0;
  bool fits = false;
};

struct VramCheck {
  VramVerdict verdict = VramVerdict::kFits;
  VramNeed need;
  std::string message;  // one line, every number and option, no pod prefix
  std::string brief;    // at most 100 characters, for warnings and audit lines
  // Tight or too large: the changes that fit (least GPU memory first), then
  // the single changes that do not, each at its lowest need.
  std::vector<VramOption> options;
};

// Compares the need of `spec` on `gpus` GPUs of model `gpu` with its
// usable memory and, when it does not fit, lists what would.
// `gpu_source` says where the model came from, for the message:
// "nodeSelector nvidia.com/gpu.product=NVIDIA-GeForce-RTX-4090".
VramCheck check_vram(const GpuMemoryPolicy& policy, const ModelSpec& spec, int64_t gpus, const GpuModel& gpu,
                     std::string_view gpu_source);

// Bytes as decimal gigabytes (1 GB = 10^9 bytes, as the seeds write GB),
// rounded up to 0.1: 279'999'999'999 -> "280.0".
std::string gb_text(int64_t bytes);

}  // namespace gpusizer
