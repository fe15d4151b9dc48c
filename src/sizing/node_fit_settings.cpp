// The nodeFit block: its node pools, read with the field readers of
// policy_fields.h.
#include "gpusizer/sizing/node_fit_settings.h"

#include <string>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "gpusizer/sizing/gpu_memory_settings.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/policy_fields.h"

namespace gpusizer {

using namespace policy_fields;  // NOLINT(google-build-using-namespace)

namespace {

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
  if (!node["name"]) fail(ProblemCode::kMissingField, path, node, "missing field name");
  if (!node["nodes"]) fail(ProblemCode::kMissingField, path, node, "missing field nodes");
  pool.name = read_string(node["name"], path + ".name");
  if (const YAML::Node selector = node["nodeSelector"]) {
    pool.node_selector = read_named<std::string>(
        selector, path + ".nodeSelector", [](const auto& value, const auto& at) { return read_string(value, at); });
  }
  if (node["gpuProduct"]) pool.gpu_product = read_string(node["gpuProduct"], path + ".gpuProduct");
  const YAML::Node nodes = node["nodes"];
  if (!nodes.IsSequence() || nodes.size() == 0)
    fail(ProblemCode::kWrongType, path + ".nodes", nodes, "must be a non-empty list of node shapes");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    pool.nodes.push_back(read_node_shape(nodes[i], path + ".nodes[" + std::to_string(i) + "]"));
  }
  return pool;
}

}  // namespace

void NodeFitPolicy::read(const YAML::Node& node, bool complete) {
  NodeFitPolicy& out = *this;
  const Block block(node, "nodeFit", complete, {"action", "poolLabel", "pools", "extendedResourceToleration"});
  block.read("action", [&](const auto& value, const auto& path) { out.action = read_action(value, path); });
  block.read("extendedResourceToleration",
             [&](const auto& value, const auto& path) { out.extended_resource_toleration = read_bool(value, path); });
  block.read("poolLabel", [&](const auto& value, const auto& path) { out.pool_label = read_string(value, path); });
  block.read("pools", [&](const auto& value, const auto& path) {
    if (!value.IsSequence()) fail(ProblemCode::kWrongType, path, value, "must be a list of node pools");
    out.pools.clear();
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      NodePool pool = read_node_pool(value[i], at);
      for (const auto& earlier : out.pools) {
        if (earlier.name == pool.name)
          fail(ProblemCode::kDuplicateField, at + ".name", value[i]["name"], "repeats pool \"" + pool.name + "\"");
      }
      out.pools.push_back(std::move(pool));
    }
  });
}

void NodeFitPolicy::finish(Policy& policy, const YAML::Node& root) {
  const NodeFitPolicy& fit = policy.rule_settings.get<NodeFitPolicy>();
  const GpuMemoryPolicy& gpu_memory = policy.rule_settings.get<GpuMemoryPolicy>();
  for (std::size_t i = 0; i < fit.pools.size(); ++i) {
    const NodePool& pool = fit.pools[i];
    if (pool.gpu_product.empty() || gpu_memory.find_gpu(pool.gpu_product)) continue;
    const YAML::Node given = root["nodeFit"] ? root["nodeFit"]["pools"] : YAML::Node();
    fail(ProblemCode::kUnknownName, "nodeFit.pools[" + std::to_string(i) + "].gpuProduct",
         given ? given[i]["gpuProduct"] : root, "\"" + pool.gpu_product + "\" matches no entry of gpuMemory.gpus");
  }
  std::shared_ptr<const NodeInventory> pools = fit.pools.empty() ? nullptr : pool_inventory(policy);
  policy.rule_settings.edit<NodeFitPolicy>().pool_nodes = std::move(pools);
}

}  // namespace gpusizer
