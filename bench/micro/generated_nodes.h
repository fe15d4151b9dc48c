// The generated fleet of node_bench.cpp (5,000 GPU nodes of 20 shapes), for
// the other benchmarks.
#pragma once

#include <memory>
#include <string>

#include "gpusizer/sizing/nodes.h"

// The fleet as one NodeList page, as GET /api/v1/nodes answers it.
const std::string& generated_node_list();
// The fleet read as the node watch reads it, built once; or one node of each
// of its 60 classes (as many classes, a hundredth of the work to make).
std::shared_ptr<const gpusizer::NodeInventory> generated_inventory(bool one_node_per_class = false);
