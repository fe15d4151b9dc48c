// Where pods live in each workload kind: one table of kind -> pod template
// locations, walked the same way for every kind.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/json/json_view.h"

namespace gpusizer {

// How a pod is written at a location.
enum class PodShape {
  kPod,           // metadata + spec.containers / spec.initContainers (Pods and pod templates)
  kArgoTemplate,  // an Argo template: container | script | containerSet, initContainers, sidecars
};

// One pod template inside an object.
struct PodTemplateRef {
  JsonView pod;  // inside the object
  PodShape shape = PodShape::kPod;
  std::vector<std::string> path;  // JSON Pointer tokens from the object root; empty for a Pod
  std::string template_name;      // Argo template name
  std::string replica_type;       // PyTorchJob replica type, JobSet job, Ray group, Volcano task name
  // Argo only: spec.templateDefaults (merged under each template) and
  // whether the workflow sets spec.podSpecPatch (which may change anything).
  JsonView template_defaults;  // absent when the workflow has none
  // Argo only: the workflow spec around the templates (its volumes,
  // nodeSelector and affinity apply to every template) and where it is.
  JsonView workflow_spec;
  std::vector<std::string> workflow_spec_path;
  bool workflow_pod_spec_patch = false;
};

// True when the kind (API group and kind, any version) holds pods.
bool holds_pods(std::string_view group, std::string_view kind);

// The pod templates of an object of this kind, in document order. Argo
// templates that do not run a pod (steps, dag, resource, suspend) are left
// out. Empty for kinds that hold no pods or objects without templates.
std::vector<PodTemplateRef> find_pod_templates(std::string_view group, std::string_view kind, JsonView object);

}  // namespace gpusizer
