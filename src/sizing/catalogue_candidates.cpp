#include "gpusizer/sizing/catalogue_candidates.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpusizer/sizing/instance_types.h"

namespace gpusizer {
namespace {

constexpr std::string_view kInstanceTypeLabel = "node.kubernetes.io/instance-type";

// The labels that describe the machine itself, as each provider's nodes
// carry them: Karpenter's (karpenter.sh/docs/reference/instance-types),
// GKE's (GoogleCloudPlatform/cluster-autoscaler gke/labels), Karpenter on
// Azure's (Azure/karpenter-provider-azure pkg/apis/v1beta1/labels.go).
constexpr std::string_view kMachineLabels[] = {kInstanceTypeLabel,
                                               "beta.kubernetes.io/instance-type",
                                               "karpenter.k8s.aws/instance-category",
                                               "karpenter.k8s.aws/instance-generation",
                                               "karpenter.k8s.aws/instance-family",
                                               "karpenter.k8s.aws/instance-size",
                                               "karpenter.k8s.aws/instance-cpu",
                                               "karpenter.k8s.aws/instance-memory",
                                               "karpenter.k8s.aws/instance-gpu-name",
                                               "karpenter.k8s.aws/instance-gpu-count",
                                               "karpenter.k8s.aws/instance-gpu-memory",
                                               "karpenter.k8s.aws/instance-gpu-manufacturer",
                                               "cloud.google.com/machine-family",
                                               "cloud.google.com/gke-accelerator",
                                               "cloud.google.com/gke-accelerator-count",
                                               "karpenter.azure.com/sku-name",
                                               "karpenter.azure.com/sku-cpu",
                                               "karpenter.azure.com/sku-memory",
                                               "karpenter.azure.com/sku-gpu-name",
                                               "karpenter.azure.com/sku-gpu-count",
                                               "karpenter.azure.com/sku-gpu-manufacturer"};

std::vector<std::pair<std::string, std::string>> machine_labels(const InstanceType& machine) {
  const std::string name(machine.name);
  std::vector<std::pair<std::string, std::string>> labels = {{std::string(kInstanceTypeLabel), name},
                                                             {"beta.kubernetes.io/instance-type", name}};
  const auto add = [&](std::string_view key, std::string value) { labels.emplace_back(key, std::move(value)); };
  switch (machine.cloud) {
    case Cloud::kAws: {
      const std::size_t dot = name.find('.');
      // The family's letters and generation: "g6e" is category g,
      // generation 6; "gr6" category gr.
      const std::string family = name.substr(0, dot);
      const std::size_t digits = family.find_first_of("0123456789");
      const std::size_t after = family.find_first_not_of("0123456789", digits);
      add("karpenter.k8s.aws/instance-category", family.substr(0, digits));
      add("karpenter.k8s.aws/instance-generation", family.substr(digits, after - digits));
      add("karpenter.k8s.aws/instance-family", family);
      add("karpenter.k8s.aws/instance-size", name.substr(dot + 1));
      add("karpenter.k8s.aws/instance-cpu", std::to_string(machine.vcpus));
      add("karpenter.k8s.aws/instance-memory", std::to_string(machine.memory_mib));
      add("karpenter.k8s.aws/instance-gpu-name", std::string(machine.gpu));
      add("karpenter.k8s.aws/instance-gpu-count", std::to_string(machine.gpus));
      add("karpenter.k8s.aws/instance-gpu-memory", std::to_string(machine.gpu_memory_mib));
      add("karpenter.k8s.aws/instance-gpu-manufacturer", "nvidia");
      break;
    }
    case Cloud::kGoogle:
      add("cloud.google.com/machine-family", name.substr(0, name.find('-')));
      add("cloud.google.com/gke-accelerator", std::string(machine.gpu));
      add("cloud.google.com/gke-accelerator-count", std::to_string(machine.gpus));
      break;
    case Cloud::kAzure:
      add("karpenter.azure.com/sku-name", name);
      add("karpenter.azure.com/sku-cpu", std::to_string(machine.vcpus));
      add("karpenter.azure.com/sku-memory", std::to_string(machine.memory_mib));
      if (!machine.gpu.empty()) add("karpenter.azure.com/sku-gpu-name", std::string(machine.gpu));
      add("karpenter.azure.com/sku-gpu-count", std::to_string(machine.gpus));
      add("karpenter.azure.com/sku-gpu-manufacturer", "nvidia");
      break;
  }
  std::sort(labels.begin(), labels.end());
  return labels;
}

NodeInventory build_catalogue() {
  NodeInventory inventory;
  inventory.source = InventorySource::kCatalogue;
  inventory.origin = "the instance catalogue";
  for (const InstanceType& machine : instance_types()) inventory.classes.push_back(machine_class(machine));
  inventory.node_count = inventory.classes.size();
  return inventory;
}

// A requirement that picks machines: one on a machine label that some node
// must have (NotIn and DoesNotExist only rule machines out).
bool picks(const NodeRequirement& requirement) {
  using Op = NodeRequirement::Op;
  return !requirement.field && is_machine_label(requirement.key) && requirement.op != Op::kNotIn &&
         requirement.op != Op::kDoesNotExist;
}

// The pod's machine constraints alone: its nodeSelector entries and
// required affinity requirements on machine labels; a term left with none
// allows any machine, and so does the affinity.
PodFacts machine_constraints(const PodFacts& pod) {
  PodFacts only = pod;
  only.node_selector.clear();
  // By key, not by entry: a workflow's nodeSelector may hold thousands.
  for (std::string_view key : kMachineLabels) {
    if (const std::string* value = pod.node_selector_value(key)) only.node_selector.emplace(key, *value);
  }
  const PodFacts& affinity = pod.affinity_source();
  only.affinity_terms.clear();
  only.has_affinity = affinity.has_affinity;
  for (const NodeSelectorTerm& term : affinity.affinity_terms) {
    NodeSelectorTerm kept;
    for (const NodeRequirement& requirement : term.requirements) {
      if (!requirement.field && is_machine_label(requirement.key)) kept.requirements.push_back(requirement);
    }
    if (kept.requirements.empty() && !term.requirements.empty()) only.has_affinity = false;  // any machine
    only.affinity_terms.push_back(std::move(kept));
  }
  if (!only.has_affinity) only.affinity_terms.clear();
  only.affinity_products = affinity.affinity_products;
  only.tolerations.clear();  // the catalogue's machines carry no taint
  only.workflow.reset();
  return only;
}

// Whether some required affinity term of `source` picks machines. An Argo
// workflow's terms serve each of its templates (thousands, maybe): they are
// looked at once per workflow on a thread.
bool affinity_picks(const PodFacts& pod) {
  const PodFacts& source = pod.affinity_source();
  const auto scan = [&] {
    return std::any_of(source.affinity_terms.begin(), source.affinity_terms.end(), [](const NodeSelectorTerm& term) {
      return std::any_of(term.requirements.begin(), term.requirements.end(), picks);
    });
  };
  if (&source == &pod || !pod.workflow) return scan();
  thread_local uint64_t serial = 0;
  thread_local bool picked = false;
  if (serial != pod.workflow->serial) {
    picked = scan();
    serial = pod.workflow->serial;
  }
  return picked;
}

}  // namespace

bool is_machine_label(std::string_view key) {
  return std::find(std::begin(kMachineLabels), std::end(kMachineLabels), key) != std::end(kMachineLabels);
}

NodeClass machine_class(const InstanceType& machine, const LaunchSettings& settings) {
  NodeClass node;
  node.shape = std::string(machine.name);
  node.labels = machine_labels(machine);
  node.hostname_is_name = true;  // no hostname label: a requirement on it matches no machine
  const Allocatable left = allocatable(machine, settings);
  node.cpu = Quantity::from_milli(left.cpu_millis);
  node.memory = Quantity::from_bytes(left.memory_bytes);
  if (!settings.storage_unknown) node.ephemeral_storage = Quantity::from_bytes(left.ephemeral_storage_bytes);
  node.extended = {{"nvidia.com/gpu", machine.gpus}};
  node.gpu = node_gpu(node.labels);
  return node;
}

const NodeInventory& catalogue_inventory() {
  static const NodeInventory inventory = build_catalogue();
  return inventory;
}

bool selects_machines(const PodFacts& pod) {
  // By entry when the pod has fewer than there are machine labels (most
  // pods: none or a few, and every review of a pod with no node known asks
  // this); by key otherwise, as a workflow's nodeSelector may hold thousands.
  const std::size_t entries = pod.node_selector.size() + (pod.workflow ? pod.workflow->spec.node_selector.size() : 0);
  const bool by_selector =
      entries < std::size(kMachineLabels)
          ? !pod.every_node_selector_entry(
                [](const std::string& key, const std::string& /*value*/) { return !is_machine_label(key); })
          : std::any_of(std::begin(kMachineLabels), std::end(kMachineLabels),
                        [&](std::string_view key) { return pod.node_selector_value(key) != nullptr; });
  return by_selector || affinity_picks(pod);
}

Candidates catalogue_candidates(const Policy& policy, const PodFacts& pod, int64_t gpus) {
  if (!pod.effective_node_name().empty() || !selects_machines(pod)) return {};
  // A workflow's templates that add no constraint of their own select the
  // workflow's machines: worked out once per workflow and GPU ask on a
  // thread, not once per template (a workflow's affinity may be large).
  const bool workflow_only = pod.workflow && pod.node_selector.empty() && !pod.has_affinity;
  struct Memo {
    uint64_t serial = 0;
    int64_t gpus = 0;
    std::string gpu_resource;
    Candidates candidates;
  };
  thread_local Memo memo;
  const std::string gpu_resource = workflow_only ? candidate_gpu_resource(pod, policy) : std::string();
  if (workflow_only && memo.serial == pod.workflow->serial && memo.gpus == gpus && memo.gpu_resource == gpu_resource) {
    return memo.candidates;
  }
  const PodFacts constraints = machine_constraints(pod);
  Candidates candidates = candidate_nodes(catalogue_inventory(), policy, constraints, gpus);
  if (workflow_only) memo = {pod.workflow->serial, gpus, gpu_resource, candidates};
  return candidates;
}

}  // namespace gpusizer
