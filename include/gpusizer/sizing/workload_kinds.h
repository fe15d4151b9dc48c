// The kinds that hold pods and where (plain data): the built-in table's
// rows (workloads/workloads.cpp) and the policy's `workloads:` list are
// both written in these terms, and the policy parser checks its paths here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpusizer {

// How a pod is written at a location.
enum class PodShape {
  kPod,           // metadata + spec.containers / spec.initContainers (Pods and pod templates)
  kArgoTemplate,  // an Argo template: container | script | containerSet, initContainers, sidecars
  kPodSpec,       // a pod spec without its metadata: containers, initContainers, volumes (KServe components)
  // One container's fields (resources, command, args) with no pod around
  // them: an operator builds the pod (KServe's model block, NIMService's
  // spec, TrainJob's trainer). Its scheduling fields are in `scheduling`.
  kContainer,
};

// Whether a pod written this way has metadata of its own (labels,
// annotations, the gpu-sizer.io/sized annotation); a pod spec written
// inline or a lone container has only the object's.
inline bool has_own_metadata(PodShape shape) { return shape == PodShape::kPod || shape == PodShape::kArgoTemplate; }

// Where one kind keeps a pod. The pattern is dot-separated keys from the
// object root: "key[]" walks every element of an array, "*" every value of
// a map; both name the pod for policy rules (the element's name or
// groupName, or the map key).
struct TemplateLocation {
  std::string pattern;
  PodShape shape = PodShape::kPod;
  // kContainer: the key of its ResourceRequirements ("resources",
  // TrainJob's "resourcesPerNode"), and how many levels above it the pod
  // spec fields (nodeSelector, tolerations, affinity) are: 0 the same
  // object, 1 its parent.
  std::string resources_key = "resources";
  int scheduling_up = 0;
};

// A kind (API group and kind, any version) and where its pods are.
struct WorkloadKind {
  std::string group;
  std::string kind;
  std::vector<TemplateLocation> locations;
};

// The keys of a location pattern, in order.
std::vector<std::string_view> location_parts(std::string_view pattern);

// Why a location pattern cannot hold a pod template, or empty when it can
// (policy validation of `workloads:`).
std::string location_problem(std::string_view pattern);

}  // namespace gpusizer
