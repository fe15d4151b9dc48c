// The kinds that hold pods and where (plain data): the built-in table's
// rows (workloads/kind_table.cpp) and the policy's `workloads:` list are
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
  // A component whose operator reads its GPU count, CPU and memory from
  // fields of its own (ComponentFields), not from a container's resources.
  kFields,
};

// Whether a pod written this way has metadata of its own (labels,
// annotations, the gpu-sizer.io/sized annotation); a pod spec written
// inline or a lone container has only the object's.
inline bool has_own_metadata(PodShape shape) { return shape == PodShape::kPod || shape == PodShape::kArgoTemplate; }

// How a component's GPU field writes the count.
enum class GpuCountFormat {
  kCount,         // a number, or a string holding one ("4"): Dynamo v1alpha1, VLLMRuntime
  kProfileCount,  // "<profile>:<count>": KubeAI's resourceProfile
  kInstanceType,  // names the machine whose GPUs it gets; the count is not written (KAITO)
};

// Where a component (PodShape::kFields) writes its GPU count and its CPU
// and memory: dotted keys below the component. The operator builds the
// pod from them, so gpu-sizer reads and patches them there.
struct ComponentFields {
  std::string gpu;
  GpuCountFormat format = GpuCountFormat::kCount;
  // The field naming the GPU's resource (Dynamo's and VLLMRuntime's
  // gpuType); empty, or the field unset: the policy's first gpuResources.
  std::string gpu_resource;
  // Empty: the component has no such field. A request and a limit given as
  // the same field are one value used as both (VLLMRuntime's cpu).
  std::string cpu_request, cpu_limit, memory_request, memory_limit;
  // The object holding the pod's nodeSelector, tolerations and affinity
  // (Dynamo's extraPodSpec); empty: none.
  std::string scheduling;

  // The field of a resource's request or limit; empty: none.
  const std::string& field_for(std::string_view resource, bool limit) const;
  // Whether a resource is written here: a request field for it.
  bool writes(std::string_view resource) const { return !field_for(resource, false).empty(); }
  // Whether any CPU or memory is: else nothing can be patched, and the
  // component is only said (its pods are sized when created).
  bool writes_resources() const { return !cpu_request.empty() || !memory_request.empty(); }
};

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
  ComponentFields fields;  // kFields only
};

// What the objects of a kind run, when nothing more specific says: the
// default policy's profile rules read it (serving kinds infer, training
// kinds train).
enum class KindRole { kNone, kServing, kTraining };

// A kind (API group and kind, any version) and where its pods are. The
// built-in rows (workloads/kind_table.cpp) also carry what the webhook
// registrations, the metric labels and the default policy are made from
// (`gpu-sizer kinds`); a policy's own `workloads:` rows leave them empty.
struct WorkloadKind {
  std::string group;
  std::string kind;
  std::vector<TemplateLocation> locations;
  std::string resource;  // the plural resource name, as the API or the CRD defines it
  // The API versions the webhook rules name: "v1" for Kubernetes' own
  // groups, "*" for a CRD (the webhook reads the same fields in each).
  std::string versions = "*";
  // The chart value `workloads.<family>` that registers the webhooks for
  // it; empty: always registered.
  std::string family;
  KindRole role = KindRole::kNone;
  // A controller that keeps its objects in place (GitOps tools compare its
  // template with git): the default policy's longLived.kinds.
  bool long_lived = false;
};

std::string_view role_name(KindRole role);

// The keys of a location pattern, in order.
std::vector<std::string_view> location_parts(std::string_view pattern);

// Why a location pattern cannot hold a pod template, or empty when it can
// (policy validation of `workloads:`).
std::string location_problem(std::string_view pattern);

// Why a field path below a component (ComponentFields) cannot name one
// field, or empty when it can: dotted keys, no [] nor *.
std::string field_path_problem(std::string_view path);

}  // namespace gpusizer
