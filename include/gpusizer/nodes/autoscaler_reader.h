// The autoscalers' objects read into what sizing keeps of them
// (sizing/autoscaler_pools.h): Karpenter NodePools (karpenter.sh/v1) and
// their EC2NodeClasses (karpenter.k8s.aws/v1) and AKSNodeClasses
// (karpenter.azure.com), and GKE ComputeClasses (cloud.google.com/v1), as
// `kubectl get nodepools,ec2nodeclasses -o yaml` and the API server give
// them. What changes no machine (disruption, expiry, AMI selection) is not
// kept.
#pragma once

#include <string>

#include "gpusizer/json/json_view.h"
#include "gpusizer/sizing/autoscaler_pools.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

// The kinds read here, by group: "NodePool", "EC2NodeClass",
// "AKSNodeClass", "ComputeClass"; empty for any other object.
std::string_view autoscaler_kind(JsonView object);

// Reads one of them into `objects` (a NodePool or each ComputeClass
// priority into pools, a node class into node_classes). Fails naming the
// field and the value, the caller names the object:
// `spec.kubelet.maxPods "many" is not a whole number`.
Status add_autoscaler_object(JsonView object, AutoscalerObjects& objects);

}  // namespace gpusizer
