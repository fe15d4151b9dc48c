#include "gpusizer/sizing/autoscaler_pools.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "gpusizer/sizing/catalogue_candidates.h"
#include "gpusizer/sizing/placement.h"
#include "gpusizer/util/numbers.h"

namespace gpusizer {
namespace {

// Karpenter's well-known labels a new node takes from the pod when the
// pool leaves them open (kubernetes-sigs/karpenter pkg/apis/v1/labels.go
// WellKnownLabels), and GKE's zone and region for a ComputeClass.
constexpr std::string_view kOpenLabels[] = {"karpenter.sh/capacity-type",
                                            "kubernetes.io/arch",
                                            "kubernetes.io/os",
                                            "topology.k8s.aws/zone-id",
                                            "topology.kubernetes.io/region",
                                            "topology.kubernetes.io/zone",
                                            "failure-domain.beta.kubernetes.io/region",
                                            "failure-domain.beta.kubernetes.io/zone"};

// Whether the machine meets the pool's requirements on machine labels and
// fits under its limits.
bool launchable(const AutoscalerPool& pool, const InstanceType& machine, const NodeClass& node) {
  if (pool.cloud && machine.cloud != *pool.cloud) return false;
  if (machine.vcpus < pool.min_vcpus || machine.memory_mib < pool.min_memory_mib) return false;
  if (pool.limit_cpu_millis && machine.vcpus * 1000 > *pool.limit_cpu_millis) return false;
  if (pool.limit_memory_bytes && machine.memory_mib * kMiB > *pool.limit_memory_bytes) return false;
  if (pool.limit_gpus && machine.gpus > *pool.limit_gpus) return false;
  return std::all_of(pool.requirements.begin(), pool.requirements.end(), [&](const NodeRequirement& requirement) {
    return !is_machine_label(requirement.key) || requirement_holds(requirement, node.label(requirement.key));
  });
}

// The pool's labels on the machine's: its template's, and the single value
// of each requirement on another label; the machine's own win, then the
// template's. Sorted once: a pool may carry many labels, and each machine
// of it gets them.
void add_pool_labels(const AutoscalerPool& pool, NodeClass& node) {
  std::vector<std::pair<std::string, std::string>> extra;
  for (const auto& [key, value] : pool.labels) {
    if (!node.label(key)) extra.emplace_back(key, value);
  }
  for (const NodeRequirement& requirement : pool.requirements) {
    if (is_machine_label(requirement.key) || requirement.op != NodeRequirement::Op::kIn ||
        requirement.values.size() != 1 || node.label(requirement.key)) {
      continue;
    }
    extra.emplace_back(requirement.key, requirement.values.front());
  }
  const auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(extra.begin(), extra.end(), by_key);
  extra.erase(std::unique(extra.begin(), extra.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
              extra.end());
  node.labels.insert(node.labels.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
  std::sort(node.labels.begin(), node.labels.end(), by_key);
  // Open: what the pool allows several values of (zones, capacity types),
  // and the well-known labels it does not fix: the value the pod asks.
  for (const NodeRequirement& requirement : pool.requirements) {
    const bool several = requirement.op == NodeRequirement::Op::kIn || requirement.op == NodeRequirement::Op::kExists;
    if (several && !is_machine_label(requirement.key) && !node.label(requirement.key))
      node.open_labels.push_back(requirement.key);
  }
  for (std::string_view key : kOpenLabels) {
    if (!node.label(key)) node.open_labels.emplace_back(key);
  }
  std::sort(node.open_labels.begin(), node.open_labels.end());
  node.open_labels.erase(std::unique(node.open_labels.begin(), node.open_labels.end()), node.open_labels.end());
}

}  // namespace

std::vector<NodeClass> launchable_machines(const AutoscalerObjects& objects, bool* more) {
  std::vector<NodeClass> machines;
  if (more) *more = false;
  for (const AutoscalerPool& pool : objects.pools) {
    const auto node_class = objects.node_classes.find(pool.node_class);
    const LaunchSettings& settings = node_class != objects.node_classes.end() ? node_class->second : pool.settings;
    std::vector<Taint> taints = pool.taints;
    std::sort(taints.begin(), taints.end());
    for (const InstanceType& machine : instance_types()) {
      NodeClass node = machine_class(machine, settings);
      if (!launchable(pool, machine, node)) continue;
      if (machines.size() == kMaxLaunchableMachines) {
        if (more) *more = true;
        return machines;
      }
      add_pool_labels(pool, node);
      node.taints = taints;
      node.launched_by = pool.kind + " " + pool.name;
      machines.push_back(std::move(node));
    }
  }
  return machines;
}

}  // namespace gpusizer
