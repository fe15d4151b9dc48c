// Reading one pod of a review (a Pod, or a pod template of a workload) into
// the facts the sizing rules see (sizing/pod_facts.h), and what is wrong
// with it. Every field is read through JsonView, so a field of the wrong
// type is a problem named by its path, never a crash.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpusizer/admission/pod_fields.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/device_claims.h"
#include "gpusizer/sizing/history.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/result.h"
#include "gpusizer/workloads/workloads.h"

namespace gpusizer {

// What is known of the cluster around the reviewed object: its nodes
// (sizing/nodes.h; nullptr: none, and the policy's nodeFit.pools stand in)
// and its DRA objects (sizing/device_claims.h; nullptr: none, and every
// claim a pod uses is said, not sized).
struct ClusterView {
  const NodeInventory* nodes = nullptr;
  const ClaimInventory* claims = nullptr;
  // What earlier runs used (sizing/history.h); nullptr: none read.
  const HistorySnapshot* history = nullptr;
};

// One pod to decide, and where it is in the reviewed object.
struct PodTarget {
  PodTemplateRef ref;  // the pod or pod template and where it is in the reviewed object
  PodContext context;  // its description, mode and how the object treats it: the facts start from it
  // The reviewed object's metadata, for labels and annotations a template
  // lacks; absent for a Pod (its own metadata is the object's).
  JsonView parent_metadata;
  // Fill PodDecision::explanation (gpu-sizer explain); the webhook leaves it off.
  bool explain = false;
  ClusterView cluster;
  // The reviewed object's namespace, where the claims its pods name are.
  std::string_view namespace_name;
  // The reviewed object's kind ("Pod", "Deployment", "PyTorchJob"), for
  // profile rules `on: kind`.
  std::string kind;
  // What decide_object read once for all of the object's templates
  // (pod_fields.h): from parent_metadata, and an Argo template's workflow.
  // When absent, read_pod reads them for this pod alone.
  std::shared_ptr<const InheritedSelection> inherited;
  std::shared_ptr<const ArgoWorkflow> workflow;
};

struct PodReading {
  PodFacts facts;
  // What is wrong, each about a field, its message naming the pod and the
  // field: "pod default/x: spec.containers[0].resources is not an object".
  std::vector<Problem> problems;
  bool accelerator_problem = false;     // a problem in a GPU or accelerator field: said, never passed silently
  std::vector<std::string> unresolved;  // resources holding {{...}}, $(VAR) or ${VAR} expressions
  bool unresolved_gpu = false;          // ... among them a GPU count
  bool spec_patched = false;            // an Argo podSpecPatch may change any of it
  bool spec_patch_names_gpu = false;    // ... and its text names a GPU resource
  // Said by /validate, the pod sized as read: a GPU request with no limit,
  // which the API server refuses unless a LimitRange's default sets one.
  std::vector<std::string> notes;
};

// REQUIRES: the reviewed document outlives the reading (names point into it).
PodReading read_pod(const Policy& policy, const PodTarget& target);

}  // namespace gpusizer
