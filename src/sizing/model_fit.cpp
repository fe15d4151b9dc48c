#include "gpusizer/sizing/model_fit.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "gpusizer/sizing/vram_options.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

constexpr int64_t kGB = 1'000'000'000;
constexpr int64_t kMinParams = 1'000'000;          // 1M
constexpr int64_t kMaxParams = 100'000 * kGB;      // 100000B
constexpr int64_t kMaxContextTokens = 10'000'000;  // the longest contexts models offer
constexpr int64_t kMaxRanks = 1'000'000;
constexpr std::array<const char*, 8> kKeys = {"params", "context", "precision", "method",
                                              "zero",   "mode",    "ranks",     "tp"};

// ---------------------------------------------------------------------------
// Numbers as people write them, and back.

// "1.5" times 10^decimals (9 for B, 3 for k) when the product is whole;
// the callers word their own errors, which name the unit.
std::optional<int64_t> scaled_decimal(std::string_view text, int decimals) {
  auto value = read_decimal(text, decimals, 0, std::numeric_limits<int64_t>::max());
  return value ? std::optional(value.value()) : std::nullopt;
}

// value / unit as a decimal without trailing zeros: (1'500'000'000, 10^9) -> "1.5".
// REQUIRES: unit is a power of 10.
std::string tenths_text(int64_t tenths) { return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10); }

// Bytes as whole units rounded up, saturating past int64.
int64_t ceil_bytes(int128 numerator, int128 denominator) { return clamp_to_int64(ceil_div(numerator, denominator)); }

// A GPU's memory as its table entry reads: "24 GB", "23.5 GB".
std::string size_text(int64_t bytes) {
  std::string text = gb_text(bytes);
  if (text.ends_with(".0")) text.resize(text.size() - 2);
  return text + " GB";
}

// 7B, 1.5B, 350M: billions from 1B up, millions below.
std::string params_text(int64_t params) {
  return params >= kGB ? decimal_text(params, kGB) + "B" : decimal_text(params, 1'000'000) + "M";
}

std::string context_text(int64_t tokens) {
  return tokens > 0 && tokens % 1000 == 0 ? std::to_string(tokens / 1000) + "k" : std::to_string(tokens);
}

// "1, 2 or 4": the tensor-parallel degrees a pod of `gpus` GPUs allows.
std::string divisors_text(int64_t gpus) {
  std::vector<std::string> divisors;
  for (int64_t d = 1; d <= gpus; ++d) {
    if (gpus % d == 0) divisors.push_back(std::to_string(d));
  }
  if (divisors.size() < 2) return join(divisors, "");
  const std::string last = divisors.back();
  divisors.pop_back();
  return join(divisors, ", ") + " or " + last;
}

// ---------------------------------------------------------------------------
// The annotation.

// Reads one key's value into spec; the problem when it is malformed.
std::optional<std::string> read_value(std::string_view key, std::string_view value, const GpuMemoryPolicy& policy,
                                      ModelSpec& spec) {
  if (key == "params") {
    const char unit = value.empty() ? '\0' : value.back();
    const int decimals = unit == 'B' || unit == 'b' ? 9 : unit == 'M' || unit == 'm' ? 6 : -1;
    const auto params = decimals >= 0 ? scaled_decimal(value.substr(0, value.size() - 1), decimals) : std::nullopt;
    if (!params) return "must be a number of parameters with B (billions) or M (millions), e.g. 7B, 1.5B or 350M";
    if (*params < kMinParams || *params > kMaxParams) return "must be from 1M to 100000B";
    spec.params = *params;
  } else if (key == "context") {
    const bool thousands = !value.empty() && (value.back() == 'k' || value.back() == 'K');
    const auto tokens = scaled_decimal(thousands ? value.substr(0, value.size() - 1) : value, thousands ? 3 : 0);
    if (!tokens) return "must be tokens (16384) or thousands of tokens (16k)";
    if (*tokens > kMaxContextTokens) return "must be at most 10000k tokens";
    spec.context_tokens = *tokens;
  } else if (key == "precision") {
    if (!policy.precision_bytes.contains(value)) {
      std::vector<std::string> known;
      for (const auto& [name, bytes] : policy.precision_bytes) known.push_back(name);
      return "unknown precision (gpuMemory.precisionBytes has " + join(known, ", ") + ")";
    }
    spec.precision = std::string(value);
  } else if (key == "method") {
    if (value == "full")
      spec.method = TrainingMethod::kFull;
    else if (value == "lora")
      spec.method = TrainingMethod::kLora;
    else if (value == "qlora")
      spec.method = TrainingMethod::kQlora;
    else
      return "must be full, lora or qlora";
  } else if (key == "zero") {
    const auto stage = read_whole(value, 0, 3);
    if (!stage) return "must be 0, 1, 2 or 3";
    spec.zero = static_cast<int>(stage.value());
  } else if (key == "mode") {
    if (value == "train")
      spec.mode = ModelMode::kTrain;
    else if (value == "infer")
      spec.mode = ModelMode::kInfer;
    else
      return "must be train or infer";
  } else if (key == "ranks") {
    const auto ranks = read_whole(value, 1, kMaxRanks);
    if (!ranks) return ranks.error();
    spec.ranks = ranks.value();
  } else if (key == "tp") {
    const auto tp = read_whole(value, 1);
    if (!tp) return tp.error();
    spec.tp = tp.value();
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// The estimates.

// Seed 002: "VRAM_inference (GB) ~ 2 x params(billions) + 1 x context
// length(thousands)". Precision scales the weights only: the KV cache stays
// at 16 bits (design 2.3). Tensor parallelism splits both over tp GPUs.
// Only the weights are certain; the context and the overhead are allowances.
VramNeed inference_need(const GpuMemoryPolicy& policy, const ModelSpec& spec) {
  const Milli bytes_per_param = policy.precision_bytes.at(spec.precision);  // parse_model checked the key
  const int128 weights_milli = int128(spec.params) * bytes_per_param;
  const int128 context_milli = int128(spec.context_tokens) * policy.context_bytes_per_token.value_ceil() * 1000;
  const int128 denominator = int128(std::max<int64_t>(1, spec.tp)) * 1000;
  const int128 overhead_milli = int128(policy.overhead.value_ceil()) * denominator;  // per GPU, not split
  VramNeed need;
  need.weights = ceil_bytes(weights_milli, denominator);
  need.context = ceil_bytes(context_milli, denominator);
  need.overhead = policy.overhead.value_ceil();
  need.certain = need.weights;
  need.total = ceil_bytes(weights_milli + context_milli + overhead_milli, denominator);
  return need;
}

// The components of training memory per GPU (docs/gpu-memory.md), over one
// denominator so the sums are exact. Ψ parameters, T of them trained (all
// for full fine-tuning, adapterShare of them for LoRA/QLoRA), N ranks:
//   weights     Ψ x precision bytes (QLoRA: quantizedBytes) + the adapter's T x 2, / N from ZeRO stage 3
//   gradients   T x precision bytes,                                          / N from stage 2
//   optimizer   T x optimizerBytes (fp32 master weights + two Adam moments),  / N from stage 1
//   activations Ψ x activationBytes of the method (an allowance, never sharded)
//   overhead    per GPU (an allowance)
// as the ZeRO paper (Rajbhandari et al. 2019, section 3) divides them:
// 7.5B on 64 GPUs holds 120 GB, 31.4, 16.6 and 1.9 GB at stages 0 to 3.
VramNeed training_need(const GpuMemoryPolicy& policy, const ModelSpec& spec, int64_t ranks) {
  const int128 n = std::max<int64_t>(1, ranks);
  const bool adapter = spec.method != TrainingMethod::kFull;
  const Milli precision = policy.precision_bytes.at(spec.precision);  // parse_model checked the key
  const Milli stored = spec.method == TrainingMethod::kQlora ? policy.quantized_bytes : precision;
  // T x 1000: the trainable parameters, in thousandths of a parameter.
  const int128 trained_milli = adapter ? int128(spec.params) * policy.adapter_share : int128(spec.params) * 1000;
  // Every part over n x 10^6: parameters x milli-bytes x milli-shares.
  const int128 denominator = n * 1'000'000;
  // Each GPU holds 1/n of a sharded part and all of another: over n, n times it.
  const auto on_each_gpu = [&](int128 part, bool sharded) { return sharded ? part : part * n; };
  const int128 weights =
      on_each_gpu(int128(spec.params) * stored * 1000 + (adapter ? trained_milli * precision : 0), spec.zero >= 3);
  const int128 gradients = on_each_gpu(trained_milli * precision, spec.zero >= 2);
  const int128 optimizer = on_each_gpu(trained_milli * policy.optimizer_bytes, spec.zero >= 1);
  const int128 activations = on_each_gpu(
      int128(spec.params) * policy.activation_bytes.at(std::string(method_name(spec.method))) * 1000, false);
  const int128 overhead = on_each_gpu(int128(policy.overhead.value_ceil()) * 1'000'000, false);
  VramNeed need;
  need.weights = ceil_bytes(weights, denominator);
  need.gradients = ceil_bytes(gradients, denominator);
  need.optimizer = ceil_bytes(optimizer, denominator);
  need.activations = ceil_bytes(activations, denominator);
  need.overhead = policy.overhead.value_ceil();
  need.certain = ceil_bytes(weights + gradients + optimizer, denominator);
  need.total = ceil_bytes(weights + gradients + optimizer + activations + overhead, denominator);
  return need;
}

// ---------------------------------------------------------------------------
// The texts.

// "params=7B method=full zero=0", "params=3B context=16k precision=bf16 mode=infer".
std::string spec_text(const ModelSpec& spec) {
  std::string text = "params=" + params_text(spec.params);
  if (spec.mode == ModelMode::kInfer) {
    text += " context=" + context_text(spec.context_tokens) + " precision=" + spec.precision + " mode=infer";
    if (spec.tp > 1) text += " tp=" + std::to_string(spec.tp);
  } else {
    text += " method=" + std::string(method_name(spec.method)) + " zero=" + std::to_string(spec.zero);
    if (spec.ranks > 0) text += " ranks=" + std::to_string(spec.ranks);
  }
  return text;
}

// The parts of the need: "40 bytes/param: weights 62.3 + optimizer 124.5 + ...".
std::string breakdown_text(const ModelSpec& spec, const VramNeed& need) {
  const std::string allowances = " + overhead " + gb_text(need.overhead);
  if (spec.mode == ModelMode::kInfer) {
    const std::string parts =
        "weights " + gb_text(need.weights) + " certain, + context " + gb_text(need.context) + allowances;
    return spec.tp > 1 ? "split over tp=" + std::to_string(spec.tp) + ": " + parts : parts;
  }
  return "weights " + gb_text(need.weights) + " + gradients " + gb_text(need.gradients) + " + optimizer " +
         gb_text(need.optimizer) + " = " + gb_text(need.certain) + " certain, + activations " +
         gb_text(need.activations) + allowances;
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

}  // namespace

std::string_view method_name(TrainingMethod method) {
  switch (method) {
    case TrainingMethod::kFull: return "full";
    case TrainingMethod::kLora: return "lora";
    case TrainingMethod::kQlora: return "qlora";
  }
  return "full";
}

int64_t world_size(const ModelSpec& spec, int64_t gpus) {
  return spec.mode == ModelMode::kTrain && spec.ranks > 0 ? spec.ranks : gpus;
}

int64_t most_suggested_gpus(const GpuMemoryPolicy& policy, int64_t world) {
  return std::max(policy.max_suggested_gpus, world);
}

VramVerdict verdict_of(const GpuMemoryPolicy& policy, const VramNeed& need, int64_t capacity) {
  if (need.certain > capacity) return VramVerdict::kTooLarge;
  if (int128(need.total) * 1000 <= int128(capacity) * policy.safety_margin) return VramVerdict::kFits;
  return VramVerdict::kTight;
}

std::string gb_text(int64_t bytes) { return tenths_text(ceil_bytes(bytes, kGB / 10)); }

Result<ModelSpec> parse_model(std::string_view text, const GpuMemoryPolicy& policy, ModelMode default_mode,
                              int64_t pod_gpus) {
  if (trim(text).empty()) return Status::invalid_argument("is empty; write e.g. \"params=7B,context=16k\"");
  ModelSpec spec;
  spec.mode = default_mode;
  // Each key's part as written, for the errors that involve two keys.
  std::map<std::string, std::string, std::less<>> parts;
  auto key_values = read_key_values(text, "params=7B");
  if (!key_values) return key_values.status();
  for (const KeyValuePart& each : key_values.value()) {
    const std::string_view part = each.text;
    const std::string_view key = each.key;
    const std::string_view value = each.value;
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      return part_error(part, "unknown key \"" + std::string(key) + "\" (known: " +
                                  join(std::vector<std::string>(kKeys.begin(), kKeys.end()), ", ") + ")");
    }
    if (parts.contains(key)) return part_error(part, "repeats key " + std::string(key) + " (each key at most once)");
    parts.emplace(key, part);
    if (auto problem = read_value(key, value, policy, spec)) return part_error(part, *problem);
  }
  if (!parts.contains("params")) return Status::invalid_argument("has no params; write e.g. \"params=7B\"");

  if (spec.mode == ModelMode::kInfer) {
    for (const char* key : {"method", "zero", "ranks"}) {
      if (parts.contains(key))
        return part_error(parts.at(key), "applies to mode=train only; remove it or set mode=train");
    }
    if (spec.tp > 1 && pod_gpus % spec.tp != 0) {
      return part_error(parts.at("tp"),
                        "must divide the pod's " + std::to_string(pod_gpus) + " GPUs: " + divisors_text(pod_gpus));
    }
    if (!policy.precision_bytes.contains(spec.precision)) {
      return Status::invalid_argument(
          "has no precision and the default bf16 is not in gpuMemory.precisionBytes; set precision");
    }
  } else {
    if (parts.contains("tp"))
      return part_error(parts.at("tp"), "applies to mode=infer only; remove it or set mode=infer");
    if (spec.precision != "bf16" && spec.precision != "fp16") {
      return part_error(parts.at("precision"),
                        "training estimates assume mixed precision (bf16 or fp16); 4-bit training is method=qlora");
    }
    if (spec.ranks > 0 && spec.ranks < pod_gpus) {
      return part_error(parts.at("ranks"), "must be at least the pod's " + std::to_string(pod_gpus) + " GPUs");
    }
  }
  return spec;
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
  check.verdict = verdict_of(policy, check.need, capacity);
  if (check.verdict != VramVerdict::kFits) check.options = vram_options(policy, spec, gpus, gpu);

  // Usable memory is shown rounded down, so a need shown above it never fits.
  const int64_t usable = static_cast<int64_t>(int128(capacity) * policy.safety_margin / 1000);
  const std::string usable_text = tenths_text(usable / (kGB / 10)) + " GB usable";
  const std::string need_text = gb_text(check.need.total);
  const std::string source = gpu_source.empty() ? "" : std::string(gpu_source) + "; ";
  const std::string of_gpu = "the " + size_text(capacity) + " of " + gpu.name + " (" + source + usable_text +
                             " at safety margin " + milli_text(policy.safety_margin) + ")";
  std::string relation;
  switch (check.verdict) {
    case VramVerdict::kFits: relation = "within the usable memory of " + of_gpu + "."; break;
    case VramVerdict::kTight:
      relation = "over the usable memory of " + of_gpu + "; it may run out of memory" +
                 (spec.mode == ModelMode::kTrain
                      ? " (activation checkpointing or a smaller micro-batch lowers the activations)."
                      : " (a shorter context or fewer concurrent sequences lowers the context).");
      break;
    case VramVerdict::kTooLarge: relation = "and its certain part alone is more than " + of_gpu + "."; break;
  }
  check.message = "model " + spec_text(spec) + " needs " + need_text + " GB per GPU (" +
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

  const std::string label = "model " + params_text(spec.params) + " " +
                            (spec.mode == ModelMode::kInfer ? "infer" : std::string(method_name(spec.method)));
  switch (check.verdict) {
    case VramVerdict::kFits:
      check.brief = label + ": " + need_text + " GB/GPU fits " + gpu.name + " (" + usable_text + " of " +
                    size_text(capacity) + ")";
      break;
    case VramVerdict::kTight:
      check.brief = label + ": " + need_text + " GB/GPU is over " + milli_text(policy.safety_margin * 100) + "% of " +
                    gpu.name + "'s " + size_text(capacity) + " (" + usable_text + "); may run out of memory";
      break;
    case VramVerdict::kTooLarge:
      check.brief = label + ": " + gb_text(check.need.certain) + " GB/GPU certain, " + gpu.name + " has " +
                    size_text(capacity) + " (gpu-sizer explain lists options)";
      break;
  }
  check.brief = truncate_utf8(check.brief, 100);  // policy GPU names can be long
  return check;
}

}  // namespace gpusizer
