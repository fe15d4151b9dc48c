// Which workload a Pod belongs to, the same from one run to the next
// (issue 29): the root owner's kind and name with the suffixes Kubernetes
// and operators generate removed, read from the Pod alone (its name or
// generateName, labels and ownerReferences: no lookup on the admission
// path). docs/research/workload-identity-sources.md cites where each
// operator writes what is read here.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "gpusizer/json/json_view.h"

namespace gpusizer {

// A label a user sets to name the workload outright; it wins over
// everything read.
inline constexpr const char* kWorkloadLabel = "gpu-sizer.io/workload";

// What a Pod says about where it came from.
struct PodOrigin {
  // metadata.name, empty at mutating admission when the Pod has a
  // generateName (the API server generates the name after mutation).
  std::string name;
  std::string generate_name;
  std::map<std::string, std::string, std::less<>> labels;
  // The controller's ownerReference (controller: true), else the first.
  std::string owner_kind;
  std::string owner_name;
};

struct WorkloadIdentity {
  std::string kind;    // Deployment, CronJob, JobSet, PyTorchJob, Pod; Workload for the label
  std::string name;    // generated suffixes removed
  std::string source;  // what said so, as a person reads it: "label jobset.sigs.k8s.io/jobset-name"

  // kind/name, the value gpu-sizer stamps on the Pod.
  std::string text() const { return kind + "/" + name; }
};

WorkloadIdentity workload_identity(const PodOrigin& pod);

// A Pod's origin from its metadata: only the labels workload_identity reads
// are copied. Fields of the wrong type read as absent (the pod reader
// reports them).
PodOrigin read_pod_origin(JsonView metadata);

// NAME without a trailing "-" (a generateName), then without at most one
// generated suffix of each kind, in either order: "-" and 5 characters of
// generateName's alphabet, and "-" and a Unix time in seconds or minutes
// (8 to 10 digits: a CronJob's Jobs, an Argo CronWorkflow's Workflows).
// A name that would be left empty is kept.
std::string without_generated_suffix(std::string_view name);

}  // namespace gpusizer
