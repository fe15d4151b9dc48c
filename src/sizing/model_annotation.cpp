// The annotation gpu-sizer.io/model read into a ModelSpec (model_fit.h):
// each key's value, then the rules between keys, each error naming the
// part as written.
#include <algorithm>
#include <array>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>

#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

constexpr int64_t kMinParams = 1'000'000;      // 1M
constexpr int64_t kMaxParams = 100'000 * kGB;  // 100000B
constexpr int64_t kMaxTokens = 10'000'000;     // the longest contexts models offer
constexpr int64_t kMaxRanks = 1'000'000;
constexpr int64_t kMaxShapeSize = 1'000'000;  // as policy models are bounded (gpu_memory_settings.cpp)
constexpr std::array<const char*, 25> kKeys = {
    "params", "model",  "context", "precision", "method",  "zero",         "mode",      "ranks",   "tp",
    "pp",     "seqs",   "rank",    "targets",   "batch",   "seq",          "optimizer", "offload", "checkpointing",
    "layers", "hidden", "heads",   "kvheads",   "headdim", "intermediate", "vocab"};
// The shape keys, as ModelShape holds them.
constexpr std::array<std::pair<const char*, int64_t ModelShape::*>, 7> kShapeKeys = {{
    {"layers", &ModelShape::layers},
    {"hidden", &ModelShape::hidden},
    {"heads", &ModelShape::heads},
    {"kvheads", &ModelShape::kv_heads},
    {"headdim", &ModelShape::head_dim},
    {"intermediate", &ModelShape::intermediate},
    {"vocab", &ModelShape::vocab},
}};
constexpr std::array<const char*, 10> kTrainOnly = {"method", "zero", "ranks",     "rank",    "targets",
                                                    "batch",  "seq",  "optimizer", "offload", "checkpointing"};
constexpr std::array<const char*, 1> kInferOnly = {"seqs"};

// "1.5" times 10^decimals (9 for B, 3 for k) when the product is whole.
std::optional<int64_t> scaled_decimal(std::string_view text, int decimals) {
  auto value = read_decimal(text, decimals, 0, std::numeric_limits<int64_t>::max());
  return value ? std::optional(value.value()) : std::nullopt;
}

// Tokens as people write them: 16384 or 16k.
std::optional<int64_t> read_tokens(std::string_view value) {
  const bool thousands = !value.empty() && (value.back() == 'k' || value.back() == 'K');
  return scaled_decimal(thousands ? value.substr(0, value.size() - 1) : value, thousands ? 3 : 0);
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

std::vector<std::string> names_of(const auto& map) {
  std::vector<std::string> names;
  for (const auto& [name, value] : map) names.push_back(name);
  return names;
}

// The one of `values` whose name(value) is `text`, or nullopt.
template <class Enum>
std::optional<Enum> named(std::string_view text, std::initializer_list<Enum> values, std::string_view (*name)(Enum)) {
  for (const Enum value : values) {
    if (name(value) == text) return value;
  }
  return std::nullopt;
}

// Reads one key's value into spec (a shape key into `shape`); the problem
// when it is malformed.
std::optional<std::string> read_value(std::string_view key, std::string_view value, const GpuMemoryPolicy& policy,
                                      ModelSpec& spec, ModelShape& shape) {
  const auto whole = [&](int64_t& out, int64_t minimum, int64_t maximum) -> std::optional<std::string> {
    const auto number = read_whole(value, minimum, maximum);
    if (!number) return number.error();
    out = number.value();
    return std::nullopt;
  };
  if (key == "params") {
    const char unit = value.empty() ? '\0' : value.back();
    const int decimals = unit == 'B' || unit == 'b' ? 9 : unit == 'M' || unit == 'm' ? 6 : -1;
    const auto params = decimals >= 0 ? scaled_decimal(value.substr(0, value.size() - 1), decimals) : std::nullopt;
    if (!params) return "must be a number of parameters with B (billions) or M (millions), e.g. 7B, 1.5B or 350M";
    if (*params < kMinParams || *params > kMaxParams) return "must be from 1M to 100000B";
    spec.params = *params;
  } else if (key == "model") {
    const ModelShape* model = policy.find_model(value);
    if (!model) {
      std::vector<std::string> known;
      for (const auto& each : policy.models) known.push_back(each.name);
      return "unknown model (gpuMemory.models has " + join(known, ", ") +
             "; or give its shape: layers, hidden, heads, kvheads, headdim, intermediate, vocab)";
    }
    spec.model = model->name;
  } else if (key == "context" || key == "seq") {
    const auto tokens = read_tokens(value);
    if (!tokens || *tokens < 1) return "must be tokens (16384) or thousands of tokens (16k)";
    if (*tokens > kMaxTokens) return "must be at most 10000k tokens";
    (key == "context" ? spec.context_tokens : spec.seq) = *tokens;
  } else if (key == "precision") {
    if (!policy.precision_bytes.contains(value)) {
      return "unknown precision (gpuMemory.precisionBytes has " + join(names_of(policy.precision_bytes), ", ") + ")";
    }
    spec.precision = std::string(value);
  } else if (key == "method") {
    // The names as method_name() writes them, so the two cannot drift.
    const auto method =
        named(value, {TrainingMethod::kFull, TrainingMethod::kLora, TrainingMethod::kQlora}, method_name);
    if (!method) return "must be full, lora or qlora";
    spec.method = *method;
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
    return whole(spec.ranks, 1, kMaxRanks);
  } else if (key == "tp") {
    return whole(spec.tp, 1, kMaxRanks);
  } else if (key == "pp") {
    return whole(spec.pp, 1, kMaxRanks);
  } else if (key == "seqs") {
    return whole(spec.sequences, 1, kMaxRanks);
  } else if (key == "rank") {
    return whole(spec.rank, 1, 65536);
  } else if (key == "batch") {
    return whole(spec.batch, 1, 65536);
  } else if (key == "targets") {
    if (value == "qv")
      spec.targets = LoraTargets::kQv;
    else if (value == "all")
      spec.targets = LoraTargets::kAll;
    else
      return "must be qv (PEFT's default: the attention q and v projections) or all (every linear layer)";
  } else if (key == "optimizer") {
    if (!policy.optimizers.contains(value)) {
      return "unknown optimizer (gpuMemory.training.optimizers has " + join(names_of(policy.optimizers), ", ") + ")";
    }
    spec.optimizer = std::string(value);
  } else if (key == "offload") {
    const auto offload =
        named(value, {Offload::kNone, Offload::kOptimizer, Offload::kAll, Offload::kNvme}, offload_name);
    if (offload)
      spec.offload = *offload;
    else
      return "must be none, optimizer (DeepSpeed offload_optimizer to CPU), all (offload_optimizer and "
             "offload_param to CPU) or nvme (both to NVMe)";
  } else if (key == "checkpointing") {
    if (value != "true" && value != "false") return "must be true or false";
    spec.checkpointing = value == "true";
  } else {
    for (const auto& [name, field] : kShapeKeys) {
      if (key == name) return whole(shape.*field, 1, kMaxShapeSize);
    }
  }
  return std::nullopt;
}

// The shape from model=NAME, with the shape keys given over it; a shape
// from the keys alone needs all of them. nullopt when neither is given.
Result<std::optional<ModelShape>> shape_of(const ModelSpec& spec, const ModelShape& given,
                                           const std::map<std::string, std::string, std::less<>>& parts,
                                           const GpuMemoryPolicy& policy) {
  std::vector<std::string> keys_given, keys_missing;
  for (const auto& [name, field] : kShapeKeys) (parts.contains(name) ? keys_given : keys_missing).push_back(name);
  if (spec.model.empty() && keys_given.empty()) return std::optional<ModelShape>();
  ModelShape shape;
  if (!spec.model.empty()) {
    shape = *policy.find_model(spec.model);
  } else if (!keys_missing.empty()) {
    return part_error(parts.at(keys_given.front()),
                      "gives part of a model's shape; also give " + join(keys_missing, ", ") + ", or model=NAME");
  } else {
    shape.name = "the annotation's shape";
  }
  const bool derived_largest = shape.largest_layer == shape.vocab * shape.hidden;
  for (const auto& [name, field] : kShapeKeys) {
    if (parts.contains(name)) shape.*field = given.*field;
  }
  if (derived_largest) shape.largest_layer = shape.vocab * shape.hidden;
  if (shape.kv_heads > shape.heads || shape.heads % shape.kv_heads != 0) {
    const std::string& part = parts.contains("kvheads") ? parts.at("kvheads")
                              : parts.contains("heads") ? parts.at("heads")
                                                        : parts.at("model");
    return part_error(part, "kvheads must divide heads (" + std::to_string(shape.heads) + ")");
  }
  return std::optional<ModelShape>(shape);
}

}  // namespace

Result<ModelSpec> parse_model(std::string_view text, const GpuMemoryPolicy& policy, ModelMode default_mode,
                              int64_t pod_gpus) {
  if (Status too_long = check_key_values_size(text, "params=7B"); !too_long.ok()) return too_long;
  if (trim(text).empty()) return Status::invalid_argument("is empty; write e.g. \"params=7B,context=16k\"");
  ModelSpec spec;
  spec.mode = default_mode;
  ModelShape shape_keys;
  // Each key's part as written, for the errors that involve two keys.
  std::map<std::string, std::string, std::less<>> parts;
  auto key_values = read_key_values(text, "params=7B");
  if (!key_values) return key_values.status();
  for (const KeyValuePart& each : key_values.value()) {
    const std::string_view part = each.text;
    const std::string_view key = each.key;
    if (!contains(kKeys, key)) {
      return part_error(part, "unknown key " + in_quotes(key) +
                                  " (known: " + join(std::vector<std::string>(kKeys.begin(), kKeys.end()), ", ") + ")");
    }
    if (parts.contains(key)) return part_error(part, "repeats key " + std::string(key) + " (each key at most once)");
    parts.emplace(key, part);
    if (auto problem = read_value(key, each.value, policy, spec, shape_keys)) return part_error(part, *problem);
  }
  auto shape = shape_of(spec, shape_keys, parts, policy);
  if (!shape) return shape.status();
  spec.shape = std::move(shape.value());
  if (!parts.contains("params")) {
    if (spec.model.empty()) return Status::invalid_argument("has no params; write e.g. \"params=7B\" or model=NAME");
    spec.params = spec.shape->params;
  }
  const auto applies_only = [&](const auto& keys, const std::string& problem) -> std::optional<Status> {
    for (const char* key : keys) {
      if (parts.contains(key)) return part_error(parts.at(key), problem);
    }
    return std::nullopt;
  };

  if (spec.mode == ModelMode::kInfer) {
    if (auto error = applies_only(kTrainOnly, "applies to mode=train only; remove it or set mode=train")) return *error;
    if (spec.tp > 1 && pod_gpus % spec.tp != 0) {
      return part_error(parts.at("tp"),
                        "must divide the pod's " + std::to_string(pod_gpus) + " GPUs: " + divisors_text(pod_gpus));
    }
    if (!policy.precision_bytes.contains(spec.precision)) {
      return Status::invalid_argument(
          "has no precision and the default bf16 is not in gpuMemory.precisionBytes; set precision");
    }
    return spec;
  }
  if (auto error = applies_only(kInferOnly, "applies to mode=infer only; remove it or set mode=infer")) return *error;
  const int64_t world = spec.ranks > 0 ? spec.ranks : pod_gpus;
  if (spec.tp * spec.pp > 1 && world % (spec.tp * spec.pp) != 0) {
    return part_error(parts.contains("pp") ? parts.at("pp") : parts.at("tp"),
                      "tp x pp (" + std::to_string(spec.tp * spec.pp) + ") must divide the world size " +
                          std::to_string(world) + (spec.ranks > 0 ? " (ranks)" : " (the pod's GPUs; set ranks=N)"));
  }
  if (!policy.precision_bytes.contains(spec.precision)) {
    return Status::invalid_argument(
        "has no precision and the default bf16 is not in gpuMemory.precisionBytes; set precision");
  }
  if (spec.precision != "bf16" && spec.precision != "fp16") {
    return part_error(parts.at("precision"),
                      "training estimates assume mixed precision (bf16 or fp16); 4-bit training is method=qlora");
  }
  if (spec.ranks > 0 && spec.ranks < pod_gpus) {
    return part_error(parts.at("ranks"), "must be at least the pod's " + std::to_string(pod_gpus) + " GPUs");
  }
  if (spec.method == TrainingMethod::kFull) {
    if (auto error = applies_only(std::array{"rank", "targets"}, "applies to method=lora or qlora only")) return *error;
  }
  // rank, targets, seq, batch and checkpointing that cannot apply (no
  // shape, no rank, no seq) leave the allowances, which explain says.
  if (spec.offload == Offload::kOptimizer && spec.zero == 0) {
    return part_error(parts.at("offload"), "needs zero=1, 2 or 3 (DeepSpeed offloads the ZeRO optimizer)");
  }
  if ((spec.offload == Offload::kAll || spec.offload == Offload::kNvme) && spec.zero != 3) {
    return part_error(parts.at("offload"),
                      std::string(offload_name(spec.offload)) +
                          " (parameters too) needs zero=3; with zero=1 or 2 use offload=optimizer");
  }
  return spec;
}

}  // namespace gpusizer
