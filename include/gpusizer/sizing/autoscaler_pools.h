// The machines autoscalers may launch for a pod, described by the cluster's
// own objects (docs/nodes.md "Autoscaler pools"): Karpenter NodePools with
// their EC2NodeClass or AKSNodeClass, and GKE ComputeClasses. A pool scaled
// to zero has no node to show; its machines are candidates beside the
// nodes (InventoryBuilder::set_launchable), each the catalogue's machine
// (instance_types.h) with the pool's labels, taints and node class
// settings. nodes/autoscaler_reader.h reads the objects. Pure: no I/O.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpusizer/sizing/instance_types.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/pod_facts.h"

namespace gpusizer {

// One way an autoscaler makes nodes: a NodePool, or one priority of a
// ComputeClass (each is tried in turn: each is a set of machines).
struct AutoscalerPool {
  std::string kind;  // "NodePool", "ComputeClass"
  std::string name;
  std::optional<Cloud> cloud;  // the machines' provider; nullopt: any
  // What the machines must meet, ANDed (a NodePool's template
  // requirements; a priority's machine family, type and GPUs). Only those
  // on the catalogue's machine labels choose machines; the others say
  // what the new node's labels will be.
  std::vector<NodeRequirement> requirements;
  int64_t min_vcpus = 0;       // ComputeClass minCores
  int64_t min_memory_mib = 0;  // ComputeClass minMemoryGb
  // A NodePool's spec.limits: a machine above one is never launched.
  std::optional<int64_t> limit_cpu_millis;
  std::optional<int64_t> limit_memory_bytes;
  std::optional<int64_t> limit_gpus;
  std::vector<std::pair<std::string, std::string>> labels;  // the new node's, besides the machine's
  std::vector<Taint> taints;
  // The node class that sets its disks and kubelet: "EC2NodeClass/default"
  // (AutoscalerObjects::node_classes); empty: none.
  std::string node_class;
  LaunchSettings settings;  // its own (a ComputeClass priority's storage)
};

struct AutoscalerObjects {
  std::vector<AutoscalerPool> pools;
  // "EC2NodeClass/default", "AKSNodeClass/gpu" -> what it sets.
  std::map<std::string, LaunchSettings, std::less<>> node_classes;

  bool empty() const { return pools.empty() && node_classes.empty(); }
};

// At most this many machines in all: a pool may launch every catalogue
// machine of its cloud (88), so a cluster's or a file's thousands of pools
// would be hundreds of thousands of node classes, in memory and in every
// decision's candidates. 10,000 is 100 pools that each allow everything.
inline constexpr std::size_t kMaxLaunchableMachines = 10000;

// Every machine of every pool, in pool order, as node classes, up to
// kMaxLaunchableMachines; `more` (when given) says whether some were left
// out. NodeClass::launched_by
// names the pool; labels are the machine's, the pool's and each
// requirement's single value; open_labels are those the autoscaler sets as
// the pod asks (Karpenter's well-known zone, region, architecture, OS and
// capacity type, and any the pool allows several values of), unless the
// pool fixes them.
// A NodePool whose node class is not among the objects uses its provider's
// defaults.
std::vector<NodeClass> launchable_machines(const AutoscalerObjects& objects, bool* more = nullptr);

}  // namespace gpusizer
