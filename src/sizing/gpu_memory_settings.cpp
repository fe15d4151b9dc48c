// The gpuMemory block: its fields, GPU models and model shapes, read with
// the field readers of policy_fields.h.
#include "gpusizer/sizing/gpu_memory_settings.h"

#include <algorithm>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpusizer/sizing/policy_fields.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

using namespace policy_fields;  // NOLINT(google-build-using-namespace)

const GpuModel* GpuMemoryPolicy::find_gpu(std::string_view name_or_product) const {
  for (const auto& gpu : gpus) {
    if (gpu.name == name_or_product) return &gpu;
  }
  for (const auto& gpu : gpus) {
    for (const auto& pattern : gpu.match) {
      if (glob_match(pattern, name_or_product)) return &gpu;
    }
  }
  return nullptr;
}

const ModelShape* GpuMemoryPolicy::find_model(std::string_view name) const {
  for (const auto& model : models) {
    if (model.name == name) return &model;
  }
  return nullptr;
}

namespace {

std::vector<GpuModel> read_gpu_models(const YAML::Node& node, const std::string& path) {
  if (!node.IsSequence()) fail(ProblemCode::kWrongType, path, node, "must be a list of {name, memory, match}");
  std::vector<GpuModel> gpus;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    const Block block(node[i], at, true, {"name", "memory", "match"});
    GpuModel gpu;
    block.read("name", [&](const auto& value, const auto& field) { gpu.name = read_string(value, field); });
    block.read("memory", [&](const auto& value, const auto& field) { gpu.memory = read_quantity(value, field); });
    block.read("match", [&](const auto& value, const auto& field) {
      gpu.match = read_string_list(value, field);
      if (gpu.match.empty()) fail(ProblemCode::kWrongType, field, value, "must be a non-empty list of glob patterns");
    });
    for (const auto& earlier : gpus) {
      if (earlier.name == gpu.name)
        fail(ProblemCode::kDuplicateField, at + ".name", node[i]["name"], "repeats GPU \"" + gpu.name + "\"");
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

// Entries of a file come first and replace built-ins of the same name; the
// other built-ins stay.
template <class Entry>
void replace_by_name(std::vector<Entry> given, std::vector<Entry>& out) {
  for (auto& builtin : out) {
    const bool replaced =
        std::any_of(given.begin(), given.end(), [&](auto& entry) { return entry.name == builtin.name; });
    if (!replaced) given.push_back(std::move(builtin));
  }
  out = std::move(given);
}

ModelShape read_model_shape(const YAML::Node& node, const std::string& path) {
  const Block block(node, path, false,
                    {"name", "params", "layers", "hidden", "heads", "kvHeads", "headDim", "intermediate", "vocab",
                     "experts", "largestLayer"});
  ModelShape model;
  // Sizes up to 10^6 keep the shape's products within model_fit.cpp's int128 arithmetic.
  const auto required = [&](const char* key, int64_t& out, int64_t minimum, int64_t maximum = 1'000'000) {
    if (!node[key]) fail(ProblemCode::kMissingField, path, node, std::string("missing field ") + key);
    block.read(key, [&](const auto& value, const auto& at) { out = read_int(value, at, minimum, maximum); });
  };
  if (!node["name"]) fail(ProblemCode::kMissingField, path, node, "missing field name");
  block.read("name", [&](const auto& value, const auto& at) { model.name = read_string(value, at); });
  required("params", model.params, 1'000'000, 100'000'000'000'000);  // 1M to 100000B, as the annotation
  required("layers", model.layers, 1);
  required("hidden", model.hidden, 1);
  required("heads", model.heads, 1);
  required("kvHeads", model.kv_heads, 1);
  required("headDim", model.head_dim, 1);
  required("intermediate", model.intermediate, 1);
  required("vocab", model.vocab, 1);
  block.read("experts", [&](const auto& value, const auto& at) { model.experts = read_int(value, at, 1, 1024); });
  block.read("largestLayer", [&](const auto& value, const auto& at) {
    model.largest_layer = read_int(value, at, 1, model.params > 0 ? model.params : 1);
  });
  // DeepSpeed's largest layer of a dense model is its embedding (docs/gpu-memory.md).
  if (model.largest_layer == 0) model.largest_layer = model.vocab * model.hidden;
  if (model.kv_heads > model.heads || model.heads % model.kv_heads != 0) {
    fail(ProblemCode::kInconsistent, path + ".kvHeads", node["kvHeads"],
         "must divide heads (" + std::to_string(model.heads) + ")");
  }
  return model;
}

std::vector<ModelShape> read_model_shapes(const YAML::Node& node, const std::string& path) {
  if (!node.IsSequence())
    fail(ProblemCode::kWrongType, path, node, "must be a list of model shapes {name, params, layers, ...}");
  std::vector<ModelShape> models;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    ModelShape model = read_model_shape(node[i], at);
    for (const auto& earlier : models) {
      if (earlier.name == model.name)
        fail(ProblemCode::kDuplicateField, at + ".name", node[i]["name"], "repeats model \"" + model.name + "\"");
    }
    models.push_back(std::move(model));
  }
  return models;
}

}  // namespace

void GpuMemoryPolicy::read(const YAML::Node& node, bool complete) {
  GpuMemoryPolicy& out = *this;
  const Block block(node, "gpuMemory", complete,
                    {"action", "safetyMargin", "productLabel", "inferProfiles", "maxSuggestedGpus", "precisionBytes",
                     "overhead", "inference", "training", "gpus", "models"});
  block.read("action", [&](const auto& value, const auto& path) { out.action = read_action(value, path); });
  block.read("safetyMargin",
             [&](const auto& value, const auto& path) { out.safety_margin = read_decimal(value, path, 1, 1000); });
  block.read("productLabel",
             [&](const auto& value, const auto& path) { out.product_label = read_string(value, path); });
  block.read("inferProfiles",
             [&](const auto& value, const auto& path) { out.infer_profiles = read_string_list(value, path); });
  block.read("maxSuggestedGpus", [&](const auto& value, const auto& path) {
    // The option search tries each GPU count up to it, on every review.
    // (Worded as a bound of its own: a whole number it already is.)
    out.max_suggested_gpus = read_int(value, path, 1);
    if (out.max_suggested_gpus > 1024)
      fail(ProblemCode::kBadValue, path, value, "must be at most 1024, found " + value.Scalar());
  });
  block.read("precisionBytes", [&](const auto& value, const auto& path) {
    out.precision_bytes = read_named<Milli>(
        value, path, [](const auto& item, const auto& at) { return read_decimal(item, at, 1, 64000); });
  });
  block.read("inference", [&](const auto& value, const auto& path) {
    const Block inference(value, path, complete, {"contextBytesPerToken"});
    inference.read("contextBytesPerToken", [&](const auto& item, const auto& at) {
      out.context_bytes_per_token = read_quantity(item, at, Zero::kAllowed);
    });
  });
  block.read("overhead",
             [&](const auto& value, const auto& path) { out.overhead = read_quantity(value, path, Zero::kAllowed); });
  block.read("training", [&](const auto& value, const auto& path) {
    const Block training(value, path, complete, {"optimizers", "quantizedBytes", "adapterShare", "activationBytes"});
    training.read("optimizers", [&](const auto& item, const auto& at) {
      out.optimizers = read_named<OptimizerCost>(item, at, [](const auto& one, const auto& one_path) {
        const Block cost(one, one_path, false, {"bytes", "pageable"});
        OptimizerCost read;
        if (!one["bytes"]) fail(ProblemCode::kMissingField, one_path, one, "missing field bytes");
        cost.read("bytes", [&](const auto& v, const auto& p) { read.bytes = read_decimal(v, p, 0, 64000); });
        cost.read("pageable", [&](const auto& v, const auto& p) { read.pageable = read_decimal(v, p, 0, 64000); });
        if (read.pageable > read.bytes)
          fail(ProblemCode::kInconsistent, one_path + ".pageable", one["pageable"], "must be at most bytes");
        return read;
      });
      if (!out.optimizers.contains("adamw"))
        fail(ProblemCode::kInconsistent, at, item, "must have adamw, the optimizer an annotation defaults to");
    });
    training.read("quantizedBytes",
                  [&](const auto& item, const auto& at) { out.quantized_bytes = read_decimal(item, at, 1, 64000); });
    training.read("adapterShare",
                  [&](const auto& item, const auto& at) { out.adapter_share = read_decimal(item, at, 0, 1000); });
    training.read("activationBytes", [&](const auto& item, const auto& at) {
      const Block methods(item, at, true, {"full", "lora", "qlora"});
      for (const char* method : {"full", "lora", "qlora"}) {
        methods.read(method, [&](const auto& one, const auto& one_path) {
          out.activation_bytes[method] = read_decimal(one, one_path, 0, 1000000);
        });
      }
    });
  });
  block.read("gpus", [&](const auto& value, const auto& path) {
    // A file's GPUs come first: first match wins.
    replace_by_name(read_gpu_models(value, path), out.gpus);
  });
  block.read("models",
             [&](const auto& value, const auto& path) { replace_by_name(read_model_shapes(value, path), out.models); });
}

void GpuMemoryPolicy::finish(Policy& policy, const YAML::Node& root) {
  check_profile_names(policy, root, {"gpuMemory", "inferProfiles"},
                      policy.rule_settings.get<GpuMemoryPolicy>().infer_profiles);
}

}  // namespace gpusizer
