// Node inventories written in C++ for the tests of candidates, caps and the
// rules that read nodes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpusizer/sizing/nodes.h"

namespace gpusizer::testing {

// The classes as a --nodes file of that name would give them.
inline NodeInventory inventory_of(std::vector<NodeClass> classes) {
  NodeInventory inventory;
  inventory.source = InventorySource::kFile;
  inventory.origin = "nodes.yaml";
  inventory.classes = std::move(classes);
  return inventory;
}

// A cluster of one node, "<shape>-0" of that instance type (and `labels`),
// with `gpus` NVIDIA GPUs, as a --nodes file gives it.
inline std::shared_ptr<const NodeInventory> one_node_inventory(
    const std::string& shape, int64_t gpus, const char* cpu, const char* memory, const char* storage,
    std::vector<Taint> taints = {}, std::vector<std::pair<std::string, std::string>> labels = {}) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  NodeInfo info;
  info.name = shape + "-0";
  info.labels = std::move(labels);
  info.labels.emplace_back("node.kubernetes.io/instance-type", shape);
  info.cpu = Quantity::parse(cpu).value();
  info.memory = Quantity::parse(memory).value();
  info.ephemeral_storage = Quantity::parse(storage).value();
  info.extended = {{"nvidia.com/gpu", gpus}};
  info.taints = std::move(taints);
  builder.upsert(info);
  return builder.build();
}

}  // namespace gpusizer::testing
