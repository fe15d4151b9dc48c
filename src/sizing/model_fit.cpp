#include "gpusizer/sizing/model_fit.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/vram_options.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

// DeepSpeed's ZeRO-3 gathers each module whole before using it:
// largest_layer_memory = 4 * largest_layer_params (stage3.py,
// estimate_zero3_model_states_mem_needs), "2 bytes fp16 params are
// gathered and 2 bytes fp16 grads are computed" (its docs). A frozen layer
// (LoRA/QLoRA's base) has no gradient: its stored bytes alone.
// Offloaded gradients are fp32 in host memory: DeepSpeed's estimators count
// 16 bytes a parameter there (4 params, 4 grads, 4 momentum, 4 variance).
constexpr int64_t kHostGradientBytes = 4;
// The KV cache is kept at 16 bits (vLLM's kv-cache-dtype auto for bf16/fp16 models).
constexpr int64_t kKvBytes = 2;

// ---------------------------------------------------------------------------
// Numbers as people write them, and back.

// Tenths as a decimal with one place: 15 -> "1.5".
std::string tenths_text(int64_t tenths) { return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10); }

// Bytes as whole units rounded up, saturating past int64.
int64_t ceil_bytes(int128 numerator, int128 denominator) { return clamp_to_int64(ceil_div(numerator, denominator)); }

// A GPU's memory as its table entry reads: "24 GB", "23.5 GB".
std::string size_text(int64_t bytes) {
  std::string text = gb_text(bytes);
  if (text.ends_with(".0")) text.resize(text.size() - 2);
  return text + " GB";
}

// 7B, 1.5B, 6.74B, 350M, 4.19M: billions from 1B up, millions below, to
// the nearest hundredth.
std::string params_text(int64_t params) {
  const int64_t unit = params < kGB ? 1'000'000 : kGB;
  const int64_t hundredth = unit / 100;
  // In int128: a count saturated at int64's most still rounds.
  const int128 rounded = (int128(params) + hundredth / 2) / hundredth * hundredth;
  return decimal_text(clamp_to_int64(rounded), unit) + (params < kGB ? "M" : "B");
}

std::string context_text(int64_t tokens) {
  return tokens > 0 && tokens % 1000 == 0 ? std::to_string(tokens / 1000) + "k" : std::to_string(tokens);
}

// ---------------------------------------------------------------------------
// The estimates.

// The parameters a LoRA adapter of rank r trains: r x (in + out) for each
// linear layer it wraps (Hu et al. 2021, LoRA, section 4.1; PEFT prints
// 4,194,304 for Llama-2-7B at r=8 on q,v).
// In int128: a shape's sizes go up to 10^6 each, and rank to 65536.
int128 adapter_params(const ModelShape& shape, int64_t rank, LoraTargets targets) {
  const int128 h = shape.hidden;
  const int128 q_out = int128(shape.heads) * shape.head_dim;
  const int128 kv_out = int128(shape.kv_heads) * shape.head_dim;
  int128 per_layer = (h + q_out) + (h + kv_out);  // q and v
  if (targets == LoraTargets::kAll) {
    per_layer += (h + kv_out) + (q_out + h);                            // k and o
    per_layer += int128(shape.experts) * 3 * (h + shape.intermediate);  // gate, up and down of each expert
  }
  return per_layer * rank * shape.layers;
}

// Activations of one GPU's micro-batch, in bytes (Korthikanti et al. 2022,
// "Reducing Activation Recomputation in Large Transformer Models",
// arXiv:2205.05198, section 4): each layer keeps s x b x h x 34 bytes at
// 16 bits, without the 5as/h attention scores FlashAttention does not keep;
// with full checkpointing each layer keeps its input (2sbh) and one layer
// is recomputed at a time; the fp32 logits add 4 x s x b x vocab.
int128 activation_bytes(const ModelShape& shape, const ModelSpec& spec) {
  const int128 sbh = int128(spec.seq) * spec.batch * shape.hidden;
  const int128 layers = spec.checkpointing ? sbh * 2 * shape.layers + sbh * 34 : sbh * 34 * shape.layers;
  return layers + int128(spec.seq) * spec.batch * shape.vocab * 4;
}

// The KV cache of `tokens` tokens, in bytes: keys and values of every layer
// (2 x layers x kv heads x head dim) at kKvBytes each.
int128 kv_cache_bytes(const ModelShape& shape, int128 tokens) {
  return int128(2) * shape.layers * shape.kv_heads * shape.head_dim * kKvBytes * tokens;
}

// Seed 002: "VRAM_inference (GB) ~ 2 x params(billions) + 1 x context
// length(thousands)". Precision scales the weights only: the KV cache stays
// at 16 bits. With the model's shape the KV cache is worked out from it.
// Tensor parallelism splits both over tp GPUs. Only the weights are
// certain; the context and the overhead are allowances.
VramNeed inference_need(const GpuMemoryPolicy& policy, const ModelSpec& spec) {
  const Milli bytes_per_param = policy.precision_bytes.at(spec.precision);  // parse_model checked the key
  const int128 tokens = int128(spec.context_tokens) * spec.sequences;
  const int128 weights_milli = int128(spec.params) * bytes_per_param;
  const int128 context_milli =
      (spec.shape ? kv_cache_bytes(*spec.shape, tokens) : tokens * policy.context_bytes_per_token.value_ceil()) * 1000;
  const int128 denominator = int128(spec.tp) * spec.pp * 1000;
  const int128 overhead_milli = int128(policy.overhead.value_ceil()) * denominator;  // per GPU, not split
  VramNeed need;
  need.weights = ceil_bytes(weights_milli, denominator);
  need.context = ceil_bytes(context_milli, denominator);
  need.overhead = policy.overhead.value_ceil();
  need.certain = need.weights;
  need.total = ceil_bytes(weights_milli + context_milli + overhead_milli, denominator);
  return need;
}

// The bytes of a stored base weight: QLoRA's quantized, else the precision's.
Milli stored_bytes(const GpuMemoryPolicy& policy, const ModelSpec& spec) {
  return spec.method == TrainingMethod::kQlora ? policy.quantized_bytes : policy.precision_bytes.at(spec.precision);
}

// The trainable parameters in thousandths: all for full fine-tuning, the
// adapter's from its rank and the model's shape, else adapterShare of them.
int128 trained_milli(const GpuMemoryPolicy& policy, const ModelSpec& spec) {
  if (spec.method == TrainingMethod::kFull) return int128(spec.params) * 1000;
  if (spec.rank > 0 && spec.shape) return adapter_params(*spec.shape, spec.rank, spec.targets) * 1000;
  return int128(spec.params) * policy.adapter_share;
}

// The components of training memory per GPU (docs/gpu-memory.md), over one
// denominator so the sums are exact. Ψ parameters, T of them trained, N ranks:
//   weights     Ψ x precision bytes (QLoRA: quantizedBytes) + the adapter's T x precision, / N from ZeRO stage 3
//   gathered    stage 3 with the model's shape: 4 bytes x its largest layer (DeepSpeed)
//   gradients   T x precision bytes,                        / N from stage 2
//   optimizer   T x the optimizer's bytes (adamw: 12),      / N from stage 1; its pageable part apart
//   activations from batch, seq and the shape, else Ψ x activationBytes of the method (an allowance)
//   overhead    per GPU (an allowance)
// as the ZeRO paper (Rajbhandari et al. 2019, section 3) divides them:
// 7.5B on 64 GPUs holds 120 GB, 31.4, 16.6 and 1.9 GB at stages 0 to 3.
// Offload moves the gradients and the optimizer (offload=all: the weights
// too) to host memory, as DeepSpeed's estimators do.
VramNeed training_need(const GpuMemoryPolicy& policy, const ModelSpec& spec, int64_t ranks) {
  const int128 n = std::max<int64_t>(1, ranks);
  const int128 m = int128(spec.tp) * spec.pp;  // the model-parallel degree
  const bool adapter = spec.method != TrainingMethod::kFull;
  const Milli precision = policy.precision_bytes.at(spec.precision);  // parse_model checked the key
  const Milli stored = stored_bytes(policy, spec);
  const OptimizerCost& optimizer = policy.optimizers.at(spec.optimizer);
  const int128 trained = trained_milli(policy, spec);
  // The model states over n x m x 10^6 (parameters x milli-bytes x
  // milli-shares): a GPU holds 1/n of a ZeRO-sharded state and 1/m of one
  // model parallelism splits.
  const int128 denominator = n * m * 1'000'000;
  const auto on_each_gpu = [&](int128 part, bool sharded) { return sharded ? part * m : part * n; };
  const int128 all_weights = int128(spec.params) * stored * 1000 + (adapter ? trained * precision : 0);
  const bool offloaded = spec.offload != Offload::kNone;
  const bool weights_offloaded = spec.offload == Offload::kAll || spec.offload == Offload::kNvme;
  const int128 weights = weights_offloaded ? 0 : on_each_gpu(all_weights, spec.zero >= 3);
  const int128 gradients = offloaded ? 0 : on_each_gpu(trained * precision, spec.zero >= 2);
  const int128 pageable = offloaded ? 0 : on_each_gpu(trained * optimizer.pageable, spec.zero >= 1);
  const int128 kept = offloaded ? 0 : on_each_gpu(trained * (optimizer.bytes - optimizer.pageable), spec.zero >= 1);
  // Offload's state is sharded at every stage: each GPU's share in host
  // memory (NVMe offload keeps it on disk).
  const bool in_host = spec.offload == Offload::kOptimizer || spec.offload == Offload::kAll;
  const int128 host = in_host ? (trained * (optimizer.bytes + kHostGradientBytes * 1000) +
                                 (spec.offload == Offload::kAll ? all_weights : 0)) *
                                    m
                              : 0;
  // Whole bytes per GPU, each divided by tp alone: the gathered layer (tp
  // splits each layer), activations (with sequence parallelism, as
  // Korthikanti et al. count them; a pipeline's first stage keeps pp
  // micro-batches of its layers in flight: all layers' worth), overhead.
  const int128 gathered_bytes_per_param = spec.method == TrainingMethod::kFull ? 2 * precision : stored;
  const int128 gathered = spec.zero >= 3 && spec.shape
                              ? ceil_div(gathered_bytes_per_param * spec.shape->largest_layer, int128(1000) * spec.tp)
                              : 0;
  const Milli allowance = policy.activation_bytes.at(std::string(method_name(spec.method)));
  const int128 activations = spec.seq > 0 && spec.shape
                                 ? ceil_div(activation_bytes(*spec.shape, spec), spec.tp)
                                 : ceil_div(int128(spec.params) * allowance, int128(1000) * spec.tp);
  VramNeed need;
  need.weights = ceil_bytes(weights, denominator);
  need.gathered = clamp_to_int64(gathered);
  need.gradients = ceil_bytes(gradients, denominator);
  need.optimizer = ceil_bytes(kept, denominator);
  need.pageable = ceil_bytes(pageable, denominator);
  need.activations = clamp_to_int64(activations);
  need.overhead = policy.overhead.value_ceil();
  need.host = ceil_bytes(host, denominator);
  const int128 state = weights + gradients + kept;
  need.certain = clamp_to_int64(ceil_div(state, denominator) + gathered);
  need.total = clamp_to_int64(ceil_div(state + pageable, denominator) + gathered + activations + need.overhead);
  return need;
}

// ---------------------------------------------------------------------------
// The texts.

// " tp=2 pp=4": the model parallelism, as the annotation writes it; empty without.
std::string parallel_keys(const ModelSpec& spec) {
  return (spec.tp > 1 ? " tp=" + std::to_string(spec.tp) : "") + (spec.pp > 1 ? " pp=" + std::to_string(spec.pp) : "");
}

// " / tp 2 x pp 4": what model parallelism divides a part by; empty without.
std::string parallel_divisor(const ModelSpec& spec, bool pipeline = true) {
  std::vector<std::string> degrees;
  if (spec.tp > 1) degrees.push_back("tp " + std::to_string(spec.tp));
  if (pipeline && spec.pp > 1) degrees.push_back("pp " + std::to_string(spec.pp));
  return degrees.empty() ? "" : " / " + join(degrees, " x ");
}

// "params=7B method=full zero=0", "model=llama-2-7b context=16k precision=bf16 mode=infer".
std::string spec_text(const ModelSpec& spec) {
  std::string text = spec.model.empty() ? "params=" + params_text(spec.params) : "model=" + spec.model;
  if (!spec.model.empty() && spec.shape && spec.params != spec.shape->params)
    text += " params=" + params_text(spec.params);
  if (spec.mode == ModelMode::kInfer) {
    text += " context=" + context_text(spec.context_tokens) + " precision=" + spec.precision + " mode=infer";
    if (spec.sequences > 1) text += " seqs=" + std::to_string(spec.sequences);
    return text + parallel_keys(spec);
  }
  if (spec.precision != "bf16") text += " precision=" + spec.precision;
  text += " method=" + std::string(method_name(spec.method)) + " zero=" + std::to_string(spec.zero);
  if (spec.rank > 0)
    text += " rank=" + std::to_string(spec.rank) + (spec.targets == LoraTargets::kAll ? " targets=all" : "");
  if (spec.optimizer != "adamw") text += " optimizer=" + spec.optimizer;
  if (spec.offload != Offload::kNone) text += " offload=" + std::string(offload_name(spec.offload));
  if (spec.seq > 0) {
    text += " batch=" + std::to_string(spec.batch) + " seq=" + context_text(spec.seq);
    if (spec.checkpointing) text += " checkpointing=true";
  }
  if (spec.ranks > 0) text += " ranks=" + std::to_string(spec.ranks);
  return text + parallel_keys(spec);
}

// The parts of the need: "weights 13.5 + gradients 0.1 + optimizer 0.8 = 14.4 certain, + ...".
std::string breakdown_text(const ModelSpec& spec, const VramNeed& need) {
  const std::string allowances = " + overhead " + gb_text(need.overhead);
  if (spec.mode == ModelMode::kInfer) {
    const std::string parts =
        "weights " + gb_text(need.weights) + " certain, + context " + gb_text(need.context) + allowances;
    return spec.tp * spec.pp > 1 ? "split over" + parallel_keys(spec) + ": " + parts : parts;
  }
  std::string text = "weights " + gb_text(need.weights);
  if (need.gathered > 0) text += " + gathered layer " + gb_text(need.gathered);
  text += " + gradients " + gb_text(need.gradients) + " + optimizer " + gb_text(need.optimizer) + " = " +
          gb_text(need.certain) + " certain, + activations " + gb_text(need.activations);
  if (need.pageable > 0) text += " + pageable optimizer " + gb_text(need.pageable);
  text += allowances;
  if (need.host > 0) text += "; offload keeps " + gb_text(need.host) + " GB per GPU in host memory";
  return text;
}

// "method=lora,zero=3 on 2 x 80 GB GPUs (A100-80GB, H100-80GB): 54.5 GB/GPU".
// A size's model names are given once, where the message first mentions it.
std::string option_text(const VramOption& option, int64_t pod_gpus, int64_t pod_capacity,
                        std::set<int64_t>& named_capacities) {
  const int64_t capacity = option.gpu_memory.value_ceil();
  std::string where;
  if (option.gpus != pod_gpus || capacity != pod_capacity) {
    where = std::to_string(option.gpus) + " x " + size_text(capacity) + (option.gpus == 1 ? " GPU" : " GPUs");
    if (named_capacities.insert(capacity).second) where += " (" + join(option.gpu_names, ", ") + ")";
  }
  const std::string what = option.change.empty() ? where
                           : where.empty()       ? option.change
                                                 : option.change + " on " + where;
  return what + ": " + gb_text(option.bytes_per_gpu) + " GB/GPU";
}

// " / 4 ranks (ZeRO-3)" when a part is sharded over more than one rank,
// else what model parallelism divides it by.
std::string sharded_text(const ModelSpec& spec, bool sharded, int64_t ranks, const char* stage) {
  return sharded && ranks > 1 ? " / " + std::to_string(ranks) + " ranks (" + stage + ")" : parallel_divisor(spec);
}

// explain's rows: each component with its formula, the sums and the GPU.
std::vector<VramPart> vram_parts(const GpuMemoryPolicy& policy, const ModelSpec& spec, const VramNeed& need,
                                 int64_t gpus, int64_t capacity) {
  std::vector<VramPart> parts;
  const std::string psi = params_text(spec.params) + " params";
  if (spec.mode == ModelMode::kInfer) {
    const std::string tp = parallel_divisor(spec);
    const std::string tokens = context_text(spec.context_tokens) + " tokens x " + std::to_string(spec.sequences) +
                               (spec.sequences == 1 ? " sequence" : " sequences");
    parts.push_back(
        {"weights", "certain", need.weights,
         psi + " x " + milli_text(policy.precision_bytes.at(spec.precision)) + " bytes (" + spec.precision + ")" + tp});
    parts.push_back({"context", "allowance", need.context,
                     spec.shape
                         ? "KV cache: 2 x " + std::to_string(spec.shape->layers) + " layers x " +
                               std::to_string(spec.shape->kv_heads) + " kv heads x " +
                               std::to_string(spec.shape->head_dim) + " head dim x 2 bytes x " + tokens + tp
                         : policy.context_bytes_per_token.to_string() + " per token x " + tokens + tp + " (seed 002)"});
  } else {
    const int64_t n = world_size(spec, gpus);
    const int128 trained = trained_milli(policy, spec);
    const std::string t =
        spec.method == TrainingMethod::kFull
            ? psi
            : params_text(clamp_to_int64(trained / 1000)) + " adapter params" +
                  (spec.rank > 0 && spec.shape
                       ? " (rank " + std::to_string(spec.rank) + ")"
                       : " (adapterShare " + milli_text(policy.adapter_share * 100) + "%" +
                             (spec.rank > 0 ? "; rank needs the model's shape: model=NAME" : "") + ")");
    const Milli precision = policy.precision_bytes.at(spec.precision);
    const std::string stored = milli_text(stored_bytes(policy, spec)) + " bytes (" +
                               (spec.method == TrainingMethod::kQlora ? "NF4" : spec.precision) + ")";
    const OptimizerCost& optimizer = policy.optimizers.at(spec.optimizer);
    const bool offloaded = spec.offload != Offload::kNone;
    parts.push_back(
        {"weights", "certain", need.weights,
         spec.offload == Offload::kAll || spec.offload == Offload::kNvme
             ? "offloaded (offload=" + std::string(offload_name(spec.offload)) + ")"
             : psi + " x " + stored +
                   (spec.method == TrainingMethod::kFull ? "" : " + " + t + " x " + milli_text(precision) + " bytes") +
                   sharded_text(spec, spec.zero >= 3, n, "ZeRO-3")});
    if (need.gathered > 0) {
      parts.push_back({"gathered layer", "certain", need.gathered,
                       milli_text(spec.method == TrainingMethod::kFull ? 2 * precision : stored_bytes(policy, spec)) +
                           " bytes x " + params_text(spec.shape->largest_layer) + " params of the largest layer" +
                           parallel_divisor(spec, false) +
                           (spec.method == TrainingMethod::kFull ? ", gathered whole with its gradient"
                                                                 : ", gathered whole (frozen: no gradient)") +
                           " (DeepSpeed ZeRO-3)"});
    }
    parts.push_back(
        {"gradients", "certain", need.gradients,
         offloaded ? "offloaded (offload=" + std::string(offload_name(spec.offload)) + ")"
                   : t + " x " + milli_text(precision) + " bytes" + sharded_text(spec, spec.zero >= 2, n, "ZeRO-2")});
    parts.push_back({"optimizer", "certain", need.optimizer,
                     offloaded ? "offloaded (offload=" + std::string(offload_name(spec.offload)) + ")"
                               : t + " x " + milli_text(optimizer.bytes - optimizer.pageable) + " bytes (" +
                                     spec.optimizer + ")" + sharded_text(spec, spec.zero >= 1, n, "ZeRO-1")});
    if (need.pageable > 0) {
      parts.push_back({"pageable optimizer", "allowance", need.pageable,
                       t + " x " + milli_text(optimizer.pageable) + " bytes that " + spec.optimizer +
                           " may page out to host memory" + sharded_text(spec, spec.zero >= 1, n, "ZeRO-1")});
    }
    parts.push_back(
        {"activations", "allowance", need.activations,
         spec.seq > 0 && spec.shape
             ? (spec.checkpointing ? "(2 x " + std::to_string(spec.shape->layers) + " layers + 34)"
                                   : "34 x " + std::to_string(spec.shape->layers) + " layers") +
                   " x batch " + std::to_string(spec.batch) + " x seq " + std::to_string(spec.seq) + " x hidden " +
                   std::to_string(spec.shape->hidden) + " bytes + 4 x batch x seq x vocab " +
                   std::to_string(spec.shape->vocab) + parallel_divisor(spec, false) + " (Korthikanti et al. 2022)"
             : psi + " x " + milli_text(policy.activation_bytes.at(std::string(method_name(spec.method)))) + " bytes" +
                   parallel_divisor(spec, false) + " (activationBytes." + std::string(method_name(spec.method)) +
                   "; seq=TOKENS and the model's shape give batch x sequence" +
                   (spec.seq == 0 && (spec.batch > 1 || spec.checkpointing) ? ": batch and checkpointing apply with seq"
                                                                            : "") +
                   ")"});
  }
  parts.push_back({"overhead", "allowance", need.overhead, "CUDA context and kernels (gpuMemory.overhead)"});
  parts.push_back({"certain", "sum", need.certain, "what cannot shrink: over the GPU's memory, it cannot run"});
  parts.push_back({"total", "sum", need.total, "certain + allowances"});
  const Milli share = spec.reserved_share > 0 ? spec.reserved_share : policy.safety_margin;
  parts.push_back({"capacity", "gpu", capacity, "the GPU's memory"});
  parts.push_back({"usable", "gpu", static_cast<int64_t>(int128(capacity) * share / 1000),
                   spec.reserved_share > 0 ? "vLLM --gpu-memory-utilization " + milli_text(share) + " x capacity"
                                           : "safetyMargin " + milli_text(share) + " x capacity"});
  if (need.host > 0) {
    parts.push_back({"host (offload)", "host", clamp_to_int64(int128(need.host) * gpus),
                     gb_text(need.host) + " GB per GPU x " + std::to_string(gpus) +
                         " GPUs of this pod: raises the pod's memory floor"});
  }
  return parts;
}

}  // namespace

std::string_view method_name(TrainingMethod method) {
  switch (method) {
    case TrainingMethod::kFull: return "full";
    case TrainingMethod::kLora: return "lora";
    case TrainingMethod::kQlora: return "qlora";
  }
  return "full";
}

std::string_view offload_name(Offload offload) {
  switch (offload) {
    case Offload::kNone: return "none";
    case Offload::kOptimizer: return "optimizer";
    case Offload::kAll: return "all";
    case Offload::kNvme: return "nvme";
  }
  return "none";
}

int64_t world_size(const ModelSpec& spec, int64_t gpus) {
  return spec.mode == ModelMode::kTrain && spec.ranks > 0 ? spec.ranks : gpus;
}

int64_t most_suggested_gpus(const GpuMemoryPolicy& policy, int64_t world) {
  return std::max(policy.max_suggested_gpus, world);
}

VramVerdict verdict_of(const GpuMemoryPolicy& policy, const ModelSpec& spec, const VramNeed& need, int64_t capacity) {
  // vLLM allocates its share of the GPU up front and fails to start when the
  // weights do not fit in it.
  const Milli all = spec.reserved_share > 0 ? spec.reserved_share : 1000;
  if (int128(need.certain) * 1000 > int128(capacity) * all) return VramVerdict::kTooLarge;
  const Milli usable = spec.reserved_share > 0 ? spec.reserved_share : policy.safety_margin;
  if (int128(need.total) * 1000 <= int128(capacity) * usable) return VramVerdict::kFits;
  return VramVerdict::kTight;
}

std::string gb_text(int64_t bytes) { return tenths_text(ceil_bytes(bytes, kGB / 10)); }

std::string gib_text(int64_t bytes) {
  const int64_t hundredths = ceil_bytes(bytes, kGiB / 100);
  const std::string cents = std::to_string(hundredths % 100);
  return std::to_string(hundredths / 100) + "." + (cents.size() < 2 ? "0" : "") + cents + " GiB";
}

VramNeed vram_per_gpu(const GpuMemoryPolicy& policy, const ModelSpec& spec, int64_t gpus) {
  if (spec.mode == ModelMode::kInfer) return inference_need(policy, spec);
  return training_need(policy, spec, world_size(spec, gpus));
}

VramCheck check_vram(const GpuMemoryPolicy& policy, const ModelSpec& spec, int64_t gpus, const GpuModel& gpu,
                     std::string_view gpu_source) {
  VramCheck check;
  check.need = vram_per_gpu(policy, spec, gpus);
  const int64_t capacity = gpu.memory.value_ceil();
  check.verdict = verdict_of(policy, spec, check.need, capacity);
  if (check.verdict != VramVerdict::kFits) check.options = vram_options(policy, spec, gpus, gpu);
  check.parts = vram_parts(policy, spec, check.need, gpus, capacity);

  // Usable memory is shown rounded down, so a need shown above it never fits.
  const bool reserved = spec.reserved_share > 0;
  const Milli share = reserved ? spec.reserved_share : policy.safety_margin;
  const int64_t usable = static_cast<int64_t>(int128(capacity) * share / 1000);
  const std::string usable_text = tenths_text(usable / (kGB / 10)) + " GB usable";
  const std::string need_text = gb_text(check.need.total);
  const std::string source = gpu_source.empty() ? "" : std::string(gpu_source) + "; ";
  const std::string share_text =
      reserved ? "vLLM --gpu-memory-utilization " + milli_text(share) : "safety margin " + milli_text(share);
  const std::string of_gpu =
      "the " + size_text(capacity) + " of " + gpu.name + " (" + source + usable_text + " at " + share_text + ")";
  std::string relation;
  switch (check.verdict) {
    case VramVerdict::kFits: relation = "within the usable memory of " + of_gpu + "."; break;
    case VramVerdict::kTight:
      relation = "over the usable memory of " + of_gpu + "; it may run out of memory" +
                 (spec.mode == ModelMode::kTrain
                      ? " (activation checkpointing or a smaller micro-batch lowers the activations)."
                      : " (a shorter context or fewer concurrent sequences lowers the context).");
      break;
    case VramVerdict::kTooLarge:
      relation = reserved ? "and its certain part alone is more than the usable memory of " + of_gpu + "."
                          : "and its certain part alone is more than " + of_gpu + ".";
      break;
  }
  check.message = (spec.model.empty() ? "model " : "") + spec_text(spec) + " needs " + need_text + " GB per GPU (" +
                  breakdown_text(spec, check.need) + "), " + relation;

  const int64_t world = world_size(spec, gpus);
  std::set<int64_t> named_capacities = {capacity};  // the message already named the pod's GPU
  std::vector<std::string> would_fit, not_enough;
  for (const VramOption& option : check.options) {
    (option.fits ? would_fit : not_enough).push_back(option_text(option, world, capacity, named_capacities));
  }
  if (check.verdict != VramVerdict::kFits) {
    check.message += would_fit.empty()
                         ? " Would fit: nothing on up to " + std::to_string(most_suggested_gpus(policy, world)) +
                               " GPUs of the models in gpuMemory.gpus."
                         : " Would fit: " + join(would_fit, "; ") + ".";
  }
  if (!not_enough.empty()) check.message += " Not enough: " + join(not_enough, "; ") + ".";

  const std::string label = "model " + (spec.model.empty() ? params_text(spec.params) : spec.model) + " " +
                            (spec.mode == ModelMode::kInfer ? "infer" : std::string(method_name(spec.method)));
  switch (check.verdict) {
    case VramVerdict::kFits:
      check.brief = label + ": " + need_text + " GB/GPU fits " + gpu.name + " (" + usable_text + " of " +
                    size_text(capacity) + ")";
      break;
    case VramVerdict::kTight:
      check.brief = label + ": " + need_text + " GB/GPU is over " + milli_text(share * 100) + "% of " + gpu.name +
                    "'s " + size_text(capacity) + " (" + usable_text + "); may run out of memory";
      break;
    case VramVerdict::kTooLarge:
      // Under vLLM's share the brief names it, the flag being the likely fix.
      check.brief =
          label + ": " + gb_text(check.need.certain) + " GB/GPU certain, " + gpu.name + " has " +
          (reserved ? tenths_text(usable / (kGB / 10)) + " GB at --gpu-memory-utilization " + milli_text(share)
                    : size_text(capacity) + " (gpu-sizer explain lists options)");
      break;
  }
  // Policy GPU names can be long; the brief leaves room for what goes before it.
  check.brief = truncate_utf8(check.brief, warning_width() - 19);
  return check;
}

}  // namespace gpusizer
