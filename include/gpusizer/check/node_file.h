// `--nodes FILE`: the nodes `check` and `explain` size against, as
// `kubectl get nodes -o yaml` (or `-o json`) prints them: a v1 List of
// Nodes, or a single Node, in one or more YAML documents.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpusizer/check/input_limits.h"
#include "gpusizer/sizing/device_claims.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

// Fails naming the file, the document and the node: "nodes.yaml: document
// 1: items[3] (node gke-l4-0): status.allocatable.cpu "8 cores" is not a
// quantity"; and past `limits`, as manifests do. The ResourceSlices beside
// the nodes (`kubectl get nodes,resourceslices -o yaml`: GPU facts where
// node labels lack them, slice_gpus.h) go to `slices` when given.
Result<std::shared_ptr<const NodeInventory>> read_node_file(const std::string& path, const InputLimits& limits = {},
                                                            std::vector<DraObject>* slices = nullptr);

}  // namespace gpusizer
