// The catalogue's machines (instance_types.h) as candidates for a pod that
// selects machines by their labels (docs/nodes.md "Instance catalogue"):
// an instance type, family, GPU model or GPU count, in its nodeSelector or
// required node affinity. A pool that scales from zero has no node to
// show, so these are the machines that can exist for it. Pure: no I/O.
#pragma once

#include <cstdint>

#include "gpusizer/sizing/candidates.h"
#include "gpusizer/sizing/instance_types.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// Every catalogue machine as a node class: its allocatable by its
// provider's arithmetic, and the labels its provider's nodes carry
// (node.kubernetes.io/instance-type; Karpenter's karpenter.k8s.aws/instance-*
// on AWS; GKE's cloud.google.com/machine-family, gke-accelerator and
// gke-accelerator-count; Karpenter on Azure's karpenter.azure.com/sku-*).
// Built once; InventorySource::kCatalogue.
const NodeInventory& catalogue_inventory();

// One catalogue machine as a node class, its allocatable with `settings`.
NodeClass machine_class(const InstanceType& machine, const LaunchSettings& settings = {});

// Whether the label describes the machine itself (one of those above).
bool is_machine_label(std::string_view key);

// Whether the pod's nodeSelector or a required node affinity term asks
// for one of those machine labels (In, Exists, Gt or Lt).
bool selects_machines(const PodFacts& pod);

// The catalogue's machines the pod's machine constraints allow. Only the
// requirements on machine labels are tried: a pool's name, a zone or a
// capacity type is the autoscaler's to meet, not the machine's. Nothing
// when the pod names its node or selects no machine label.
Candidates catalogue_candidates(const Policy& policy, const PodFacts& pod, int64_t gpus);

}  // namespace gpusizer
