// Node inventories written in C++ for the tests of candidates, caps and the
// rules that read nodes.
#pragma once

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

}  // namespace gpusizer::testing
