// The policy blocks of the rules beyond the table (sharedMemory,
// dataLoader, gpuMemory, nodeFit, nodeCaps), each read with the field
// readers of policy_fields.h; policy.cpp reads the rest and merges.
#include <algorithm>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/policy_fields.h"
#include "gpusizer/util/strings.h"

namespace gpusizer::policy_fields {

namespace {

std::vector<GpuModel> read_gpu_models(const YAML::Node& node, const std::string& path) {
  if (!node.IsSequence()) fail(path, node, "must be a list of {name, memory, match}");
  std::vector<GpuModel> gpus;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    const Block block(node[i], at, true, {"name", "memory", "match"});
    GpuModel gpu;
    block.read("name", [&](const auto& value, const auto& field) { gpu.name = read_string(value, field); });
    block.read("memory", [&](const auto& value, const auto& field) { gpu.memory = read_quantity(value, field); });
    block.read("match", [&](const auto& value, const auto& field) {
      gpu.match = read_string_list(value, field);
      if (gpu.match.empty()) fail(field, value, "must be a non-empty list of glob patterns");
    });
    for (const auto& earlier : gpus) {
      if (earlier.name == gpu.name) fail(at + ".name", node[i]["name"], "repeats GPU \"" + gpu.name + "\"");
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
    if (!node[key]) fail(path, node, std::string("missing field ") + key);
    block.read(key, [&](const auto& value, const auto& at) { out = read_int(value, at, minimum, maximum); });
  };
  if (!node["name"]) fail(path, node, "missing field name");
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
    fail(path + ".kvHeads", node["kvHeads"], "must divide heads (" + std::to_string(model.heads) + ")");
  }
  return model;
}

std::vector<ModelShape> read_model_shapes(const YAML::Node& node, const std::string& path) {
  if (!node.IsSequence()) fail(path, node, "must be a list of model shapes {name, params, layers, ...}");
  std::vector<ModelShape> models;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    ModelShape model = read_model_shape(node[i], at);
    for (const auto& earlier : models) {
      if (earlier.name == model.name) fail(at + ".name", node[i]["name"], "repeats model \"" + model.name + "\"");
    }
    models.push_back(std::move(model));
  }
  return models;
}

NodeShape read_node_shape(const YAML::Node& node, const std::string& path) {
  const Block block(node, path, true, {"name", "gpus", "cpu", "memory", "ephemeralStorage"});
  NodeShape shape;
  block.read("name", [&](const auto& value, const auto& at) { shape.name = read_string(value, at); });
  block.read("gpus", [&](const auto& value, const auto& at) { shape.gpus = read_int(value, at, 0); });
  block.read("cpu", [&](const auto& value, const auto& at) { shape.cpu = read_quantity(value, at); });
  block.read("memory", [&](const auto& value, const auto& at) { shape.memory = read_quantity(value, at); });
  block.read("ephemeralStorage",
             [&](const auto& value, const auto& at) { shape.ephemeral_storage = read_quantity(value, at); });
  return shape;
}

NodePool read_node_pool(const YAML::Node& node, const std::string& path) {
  require_map(node, path);
  check_keys(node, path, {"name", "nodeSelector", "gpuProduct", "nodes"});
  NodePool pool;
  if (!node["name"]) fail(path, node, "missing field name");
  if (!node["nodes"]) fail(path, node, "missing field nodes");
  pool.name = read_string(node["name"], path + ".name");
  if (const YAML::Node selector = node["nodeSelector"]) {
    pool.node_selector = read_named<std::string>(
        selector, path + ".nodeSelector", [](const auto& value, const auto& at) { return read_string(value, at); });
  }
  if (node["gpuProduct"]) pool.gpu_product = read_string(node["gpuProduct"], path + ".gpuProduct");
  const YAML::Node nodes = node["nodes"];
  if (!nodes.IsSequence() || nodes.size() == 0) fail(path + ".nodes", nodes, "must be a non-empty list of node shapes");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    pool.nodes.push_back(read_node_shape(nodes[i], path + ".nodes[" + std::to_string(i) + "]"));
  }
  return pool;
}

void read_shm_serving(const YAML::Node& node, bool complete, ShmServingPolicy& out) {
  const std::string where = "sharedMemory.serving";
  const Block block(node, where, complete, {"profiles", "fromGpus", "minimum", "size", "tableIncludes"});
  block.read("profiles", [&](const auto& value, const auto& path) { out.profiles = read_string_list(value, path); });
  block.read("fromGpus", [&](const auto& value, const auto& path) { out.from_gpus = read_int(value, path, 1); });
  block.read("minimum", [&](const auto& value, const auto& path) { out.sizes.minimum = read_quantity(value, path); });
  block.read("size", [&](const auto& value, const auto& path) { out.sizes.size = read_quantity(value, path); });
  block.read("tableIncludes", [&](const auto& value, const auto& path) {
    out.sizes.table_includes = read_quantity(value, path, Zero::kAllowed);
  });
  out.sizes.serving = true;
  if (out.sizes.size < out.sizes.minimum) {
    fail(where + ".size", node["size"] ? node["size"] : node,
         "is below " + where + ".minimum " + out.sizes.minimum.to_string());
  }
}

}  // namespace

CheckAction read_action(const YAML::Node& node, const std::string& path) {
  const std::string text = read_string(node, path);
  if (text == "warn") return CheckAction::kWarn;
  if (text == "deny") return CheckAction::kDeny;
  fail(path, node, "must be warn or deny, found \"" + text + "\"");
}

void read_shared_memory(const YAML::Node& node, bool complete, SharedMemoryPolicy& out) {
  const Block block(node, "sharedMemory", complete,
                    {"profiles", "minimum", "size", "tableIncludes", "volumeName", "serving"});
  block.read("serving", [&](const auto& value, const auto&) { read_shm_serving(value, complete, out.serving); });
  block.read("profiles", [&](const auto& value, const auto& path) { out.profiles = read_string_list(value, path); });
  block.read("minimum", [&](const auto& value, const auto& path) { out.minimum = read_quantity(value, path); });
  block.read("size", [&](const auto& value, const auto& path) { out.size = read_quantity(value, path); });
  block.read("tableIncludes", [&](const auto& value, const auto& path) {
    out.table_includes = read_quantity(value, path, Zero::kAllowed);
  });
  block.read("volumeName", [&](const auto& value, const auto& path) { out.volume_name = read_dns_label(value, path); });
  if (out.size < out.minimum) {
    fail("sharedMemory.size", node["size"] ? node["size"] : node,
         "is below sharedMemory.minimum " + out.minimum.to_string());
  }
}

void read_data_loader(const YAML::Node& node, bool complete, DataLoaderPolicy& out) {
  const Block block(node, "dataLoader", complete,
                    {"overheadFactor", "perGpuBase", "podBase", "defaultPrefetch", "roundUpTo", "dtypeBytes"});
  block.read("overheadFactor", [&](const auto& value, const auto& path) {
    out.overhead_factor = read_decimal(value, path, 1000, 1000000);
  });
  block.read("perGpuBase", [&](const auto& value, const auto& path) {
    out.per_gpu_base = read_quantity(value, path, Zero::kAllowed);
  });
  block.read("podBase",
             [&](const auto& value, const auto& path) { out.pod_base = read_quantity(value, path, Zero::kAllowed); });
  block.read("defaultPrefetch",
             [&](const auto& value, const auto& path) { out.default_prefetch = read_int(value, path, 1); });
  block.read("roundUpTo", [&](const auto& value, const auto& path) { out.round_up_to = read_quantity(value, path); });
  block.read("dtypeBytes", [&](const auto& value, const auto& path) {
    out.dtype_bytes = read_named<int64_t>(
        value, path, [](const auto& item, const auto& item_path) { return read_int(item, item_path, 1); });
  });
}

void read_gpu_memory(const YAML::Node& node, bool complete, GpuMemoryPolicy& out) {
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
    if (out.max_suggested_gpus > 1024) fail(path, value, "must be at most 1024, found " + value.Scalar());
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
        if (!one["bytes"]) fail(one_path, one, "missing field bytes");
        cost.read("bytes", [&](const auto& v, const auto& p) { read.bytes = read_decimal(v, p, 0, 64000); });
        cost.read("pageable", [&](const auto& v, const auto& p) { read.pageable = read_decimal(v, p, 0, 64000); });
        if (read.pageable > read.bytes) fail(one_path + ".pageable", one["pageable"], "must be at most bytes");
        return read;
      });
      if (!out.optimizers.contains("adamw")) fail(at, item, "must have adamw, the optimizer an annotation defaults to");
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

void read_node_fit(const YAML::Node& node, bool complete, NodeFitPolicy& out) {
  const Block block(node, "nodeFit", complete, {"action", "poolLabel", "pools", "extendedResourceToleration"});
  block.read("action", [&](const auto& value, const auto& path) { out.action = read_action(value, path); });
  block.read("extendedResourceToleration",
             [&](const auto& value, const auto& path) { out.extended_resource_toleration = read_bool(value, path); });
  block.read("poolLabel", [&](const auto& value, const auto& path) { out.pool_label = read_string(value, path); });
  block.read("pools", [&](const auto& value, const auto& path) {
    if (!value.IsSequence()) fail(path, value, "must be a list of node pools");
    out.pools.clear();
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      NodePool pool = read_node_pool(value[i], at);
      for (const auto& earlier : out.pools) {
        if (earlier.name == pool.name) fail(at + ".name", value[i]["name"], "repeats pool \"" + pool.name + "\"");
      }
      out.pools.push_back(std::move(pool));
    }
  });
}

void read_node_caps(const YAML::Node& node, bool complete, NodeCapsPolicy& out) {
  const Block block(node, "nodeCaps", complete, {"reserve"});
  block.read("reserve", [&](const auto& value, const auto& path) {
    const Block reserve(value, path, complete, {"cpu", "memory", "ephemeralStorage"});
    reserve.read("cpu", [&](const auto& v, const auto& at) { out.reserve_cpu = read_quantity(v, at, Zero::kAllowed); });
    reserve.read("memory",
                 [&](const auto& v, const auto& at) { out.reserve_memory = read_quantity(v, at, Zero::kAllowed); });
    reserve.read("ephemeralStorage", [&](const auto& v, const auto& at) {
      out.reserve_ephemeral_storage = read_quantity(v, at, Zero::kAllowed);
    });
  });
}

void read_long_lived(const YAML::Node& node, bool complete, LongLivedPolicy& out) {
  const Block block(node, "longLived", complete, {"kinds", "patchTemplates"});
  block.read("kinds", [&](const auto& value, const auto& path) { out.kinds = read_string_list(value, path); });
  block.read("patchTemplates",
             [&](const auto& value, const auto& path) { out.patch_templates = read_bool(value, path); });
}

std::vector<WorkloadKind> read_workloads(const YAML::Node& node) {
  if (!node.IsSequence()) fail("workloads", node, "must be a list of {group, kind, templates, podSpecs, containers}");
  std::vector<WorkloadKind> kinds;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node& entry = node[i];
    const std::string path = "workloads[" + std::to_string(i) + "]";
    require_map(entry, path);
    check_keys(entry, path, {"group", "kind", "templates", "podSpecs", "containers"});
    WorkloadKind kind;
    // The core group is written "" (or left out), as in apiVersion: v1.
    if (entry["group"]) kind.group = entry["group"].IsNull() ? "" : read_string(entry["group"], path + ".group");
    if (!entry["kind"]) fail(path, entry, "missing field kind");
    kind.kind = read_string(entry["kind"], path + ".kind");
    if (kind.kind.empty()) fail(path + ".kind", entry["kind"], "must name the kind, e.g. MyTrainingJob");
    for (const auto& [key, shape] : {std::pair{"templates", PodShape::kPod}, std::pair{"podSpecs", PodShape::kPodSpec},
                                     std::pair{"containers", PodShape::kContainer}}) {
      if (!entry[key]) continue;
      const std::string list_path = path + "." + key;
      const std::vector<std::string> patterns = read_string_list(entry[key], list_path);
      for (std::size_t n = 0; n < patterns.size(); ++n) {
        const std::string problem = location_problem(patterns[n]);
        if (!problem.empty()) {
          fail(list_path + "[" + std::to_string(n) + "]", entry[key][n],
               "\"" + patterns[n] + "\" cannot hold a pod template: it " + problem);
        }
        kind.locations.push_back({patterns[n], shape});
      }
    }
    if (kind.locations.empty()) {
      fail(path, entry,
           "names no place for pods: give templates (pod templates, {metadata, spec: {containers}}), "
           "podSpecs ({containers}) or containers ({image, resources})");
    }
    const bool repeated = std::any_of(kinds.begin(), kinds.end(), [&](const WorkloadKind& other) {
      return other.group == kind.group && other.kind == kind.kind;
    });
    if (repeated) fail(path, entry, "names " + kind.kind + " (group \"" + kind.group + "\") a second time");
    kinds.push_back(std::move(kind));
  }
  return kinds;
}

}  // namespace gpusizer::policy_fields
