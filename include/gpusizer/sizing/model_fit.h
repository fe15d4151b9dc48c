// GPU memory (VRAM) fit of a model, from the annotation gpu-sizer.io/model
// (design docs/plans/issue-8-design.md section 2.3; seeds 002, 003, 004).
// Pure: plain structs in and out, exact integer arithmetic, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/gpu_memory_settings.h"
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
// DeepSpeed's offload: offload_optimizer (gradients and optimizer state
// to host memory), with it offload_param (ZeRO-3 weights too), or both to
// NVMe (ZeRO-Infinity: off the GPU, and not in host memory).
enum class Offload { kNone, kOptimizer, kAll, kNvme };
// The linear layers a LoRA adapter of rank R wraps: PEFT's default for
// Llama-style models (q_proj, v_proj), or every linear layer (QLoRA's).
enum class LoraTargets { kQv, kAll };

struct ModelSpec {
  int64_t params = 0;
  std::string model;                // model=NAME: an entry of gpuMemory.models; empty: none
  std::optional<ModelShape> shape;  // from model=NAME and the shape keys; nullopt: neither given
  std::string precision = "bf16";
  ModelMode mode = ModelMode::kTrain;
  // Model parallelism: each GPU holds 1/tp of every layer (tensor
  // parallel) of 1/pp of the layers (pipeline stages).
  int64_t tp = 1;
  int64_t pp = 1;
  // Inference.
  int64_t context_tokens = 0;  // per sequence; training ignores it
  int64_t sequences = 1;       // seqs: sequences served at once
  // vLLM's --gpu-memory-utilization from the container's args, in
  // thousandths: the share of the GPU it may use; 0: not given.
  Milli reserved_share = 0;
  // Training.
  TrainingMethod method = TrainingMethod::kFull;
  int zero = 0;       // DeepSpeed ZeRO stage, 0..3
  int64_t ranks = 0;  // world size; 0: the pod's GPUs
  int64_t rank = 0;   // LoRA rank (needs the shape); 0: adapterShare of the parameters
  LoraTargets targets = LoraTargets::kQv;
  std::string optimizer = "adamw";
  Offload offload = Offload::kNone;
  int64_t batch = 1;  // micro-batch per GPU
  int64_t seq = 0;    // tokens per sequence (needs the shape); 0: the activation allowance
  bool checkpointing = false;
};

// Parses the annotation's value. `default_mode` applies when it has no
// `mode` (infer for gpuMemory.inferProfiles); `pod_gpus` bounds `ranks` and
// `tp`. Errors name the part and the problem, `part "zero=4": must be 0, 1,
// 2 or 3`, and read after the caller's `pod X: annotation gpu-sizer.io/model `.
Result<ModelSpec> parse_model(std::string_view text, const GpuMemoryPolicy& policy, ModelMode default_mode,
                              int64_t pod_gpus);

// Bytes one GPU holds, each part rounded up; `certain` and `total` are
// computed from the exact sums, so they can be a few bytes below the sums of
// the rounded parts. The certain part cannot shrink without changing the
// method, the sharding or the GPUs: weights, ZeRO-3's gathered layer,
// gradients and the optimizer state that cannot page out. The rest are
// allowances: activations, the pageable optimizer state, the context (KV
// cache) and the overhead. `host` is what offload keeps in host memory for
// each GPU.
struct VramNeed {
  int64_t total = 0;
  int64_t certain = 0;
  int64_t weights = 0;
  int64_t gathered = 0;  // ZeRO-3: the largest layer, gathered whole (DeepSpeed's 4 x largest layer)
  int64_t gradients = 0;
  int64_t optimizer = 0;  // what stays on the GPU
  int64_t pageable = 0;   // what a paged optimizer may move to host memory
  int64_t activations = 0;
  int64_t context = 0;
  int64_t overhead = 0;
  int64_t host = 0;
};

// One row of the arithmetic, for explain: a component per GPU and how it
// was worked out.
struct VramPart {
  std::string name;     // "weights", "gathered layer", ..., "certain", "total", "capacity", "host (offload)"
  std::string kind;     // "certain", "allowance", "sum", "gpu" or "host"
  int64_t bytes = 0;    // per GPU (host: per pod)
  std::string formula;  // "6.74B params x 2 bytes (bf16)"
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

// "none", "optimizer", "all", "nvme", as the annotation writes the offload.
std::string_view offload_name(Offload offload);

// N: the GPUs the model is spread over. Training shards over its world
// size, which `ranks` sets for jobs spanning pods; inference runs per pod.
int64_t world_size(const ModelSpec& spec, int64_t gpus);

// K: options never suggest more GPUs than this, max(maxSuggestedGpus, world).
int64_t most_suggested_gpus(const GpuMemoryPolicy& policy, int64_t world);

// A need of `spec` against a GPU of `capacity` bytes: the certain part
// against all of it (against what vLLM may use, when spec.reserved_share
// says), the total against the safety margin (or vLLM's share).
VramVerdict verdict_of(const GpuMemoryPolicy& policy, const ModelSpec& spec, const VramNeed& need, int64_t capacity);

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
  std::vector<VramPart> parts;  // each component, the sums and the GPU, for explain
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
// Bytes as binary gigabytes rounded up to 0.01, as explain's rows show
// them: "12.55 GiB".
std::string gib_text(int64_t bytes);

}  // namespace gpusizer
