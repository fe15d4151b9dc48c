// Node objects (v1/Node, as the API server and `kubectl get nodes -o yaml`
// give them) read into what sizing keeps of a node (sizing/nodes.h): its
// name, labels, taints, cordon and allocatable resources. Everything else
// of a Node (status.images, conditions, addresses: most of its bytes) is
// not kept.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpusizer/json/json_view.h"
#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

// A quantity as written (a string, or a bare number). Fails naming the
// field and the value: `status.allocatable.memory "27Gb" is not a
// quantity`; a negative one fails unless allow_negative.
Result<Quantity> read_quantity(JsonView value, const std::string& field, bool allow_negative);

// One matchExpressions (or matchFields) entry of a node selector term (a
// pod's affinity, a NodePool's requirements); nullopt for an operator the
// API server would refuse, which then does not narrow the nodes.
std::optional<NodeRequirement> read_node_requirement(JsonView expression, bool field);

// A list of taints (a Node's spec.taints, a NodePool's template taints).
// Fails naming the field: `spec.taints[2].effect "Never" is not NoSchedule,
// PreferNoSchedule or NoExecute`.
Result<std::vector<Taint>> read_taints(JsonView taints, const std::string& field);

// One Node. Fails naming the field and the value: `status.allocatable.memory
// "27Gb" is not a quantity`, `status.allocatable.memory "-1Gi" is negative`
// (the caller names the node). Allocatable resources that are absent are not
// known (nullopt), not zero.
Result<NodeInfo> read_node(JsonView node);

// The nodes of one document: a v1 List (kind List or NodeList) of Nodes, or
// a single Node. ResourceSlices beside them (`kubectl get
// nodes,resourceslices -o yaml`) and the autoscalers' objects are not
// nodes and are skipped here (the caller reads them with claim_reader.h
// and autoscaler_reader.h). `where` starts each error:
// "nodes.yaml: items[3] (node gke-l4-0): ...".
// REQUIRES: builder's source and origin say where the documents came from.
Status add_nodes(JsonView document, const std::string& where, InventoryBuilder& builder);

}  // namespace gpusizer
