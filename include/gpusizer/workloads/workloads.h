// Where pods live in each workload kind: one table of kind -> pod template
// locations, walked the same way for every kind, which a policy can extend
// (`workloads:`); and, for kinds in neither, a walk that discovers pod
// templates by their shape.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/json/json_view.h"
#include "gpusizer/sizing/workload_kinds.h"

namespace gpusizer {

// One pod template inside an object.
struct PodTemplateRef {
  JsonView pod;  // inside the object
  PodShape shape = PodShape::kPod;
  std::vector<std::string> path;  // JSON Pointer tokens from the object root; empty for a Pod
  std::string template_name;      // Argo template name
  std::string replica_type;       // PyTorchJob replica type, JobSet job, Ray group, Volcano task name
  // kContainer: the ResourceRequirements key, and the object holding the
  // pod's scheduling fields (absent: none).
  std::string resources_key = "resources";
  JsonView scheduling;
  // kFields: where the component writes its GPU count, CPU and memory (in
  // the kind's row, which outlives the decision).
  const ComponentFields* fields = nullptr;
  // Argo only: spec.templateDefaults (merged under each template) and
  // whether the workflow sets spec.podSpecPatch (which may change anything).
  JsonView template_defaults;  // absent when the workflow has none
  // Argo only: the workflow spec around the templates (its volumes,
  // nodeSelector and affinity apply to every template) and where it is.
  JsonView workflow_spec;
  std::vector<std::string> workflow_spec_path;
  bool workflow_pod_spec_patch = false;
};

// The built-in table (docs/workloads.md), from each project's CRD.
const std::vector<WorkloadKind>& builtin_workload_kinds();

// The built-in table as `gpu-sizer kinds --output json|yaml` prints it: one
// entry per row with its group, kind, resource, versions, family, role,
// longLived and locations ({pattern, shape}).
std::string kind_table_json();
std::string kind_table_yaml();

// The kind's entry: the policy's own list first (a cluster may correct a
// built-in row), then the built-in table; nullptr when neither names it.
const WorkloadKind* find_workload_kind(std::string_view group, std::string_view kind,
                                       const std::vector<WorkloadKind>& policy_kinds);

// The pod templates of an object of this kind, in document order. Argo
// templates that do not run a pod (steps, dag, resource, suspend) are left
// out. Empty for objects without templates.
std::vector<PodTemplateRef> find_pod_templates(const WorkloadKind& entry, JsonView object);
// The same for a built-in kind; empty for kinds the table does not name.
std::vector<PodTemplateRef> find_pod_templates(std::string_view group, std::string_view kind, JsonView object);

// True for a resource name that is a GPU (the policy's gpuResources).
using IsGpuResource = std::function<bool(std::string_view)>;

// For a kind no table names: the pod templates ({metadata, spec:
// {containers}}), pod specs ({containers}) and containers ({image,
// resources}) anywhere in the object that ask for a GPU, outermost first.
std::vector<PodTemplateRef> discover_pod_templates(JsonView object, const IsGpuResource& is_gpu);

// Where an object asks for GPUs outside what the pods in `read` are read
// from (their containers and resources): a GPU resource with a count other
// than 0 in a ResourceRequirements (under resources*.limits or .requests),
// or a field named for GPUs whose value is a GPU resource (VLLMRuntime's
// gpuType: nvidia.com/gpu). Quotas and limits (minResources, a NodePool's
// limits, a Queue's capability) and tolerations ask for nothing; metadata
// and status are not looked at.
//
// For an object of a kind no table names (`unknown`; an object without a
// kind too), a field named for a GPU count (gpu, gpus, numGpus, gpuCount,
// numGpusPerNode, {gpu: {quantity}}...) holding a count other than 0 asks
// as well, except where a kind describes machines (a
// DynamoGraphDeploymentRequest's spec.hardware, a ComputeClass's
// spec.priorities).
//
// Apart from those, the DRA claims named outside the pods read (a
// resourceClaimName or resourceClaimTemplateName, a NIMService's
// claimCreationSpec): whether they hold GPUs is not known there, so
// they are said, not counted as asks.
struct GpuAsks {
  std::vector<std::string> paths;  // field paths, the first few
  std::size_t count = 0;           // all of them
  std::vector<std::string> claim_paths;
  std::size_t claim_count = 0;
};
struct UnknownKind {
  std::string_view group;
  std::string_view kind;
};
GpuAsks gpu_asks_outside(JsonView object, const std::vector<PodTemplateRef>& read, const IsGpuResource& is_gpu,
                         const UnknownKind* unknown = nullptr);

}  // namespace gpusizer
