// What gpu-sizer knows of the cluster's nodes (docs/rules.md "Node caps"):
// an immutable inventory of node classes, each the nodes that look the same
// to sizing (labels other than the node's own name, taints, allocatable
// resources, unschedulable). A fleet of thousands of nodes is a few dozen
// classes, so a decision looks at classes, never at every node.
//
// The inventory comes from the cluster (serve watches v1/Node), from a file
// (`check --nodes`: what `kubectl get nodes -o yaml` prints), or from the
// policy's nodeFit.pools; nodes/node_reader.h reads Nodes into it. Pure:
// plain structs, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// The label every node carries with its own name; a class keeps its nodes'
// names instead (NodeClass::names), so it does not split the fleet.
inline constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";
// The label and taint GKE gives the nodes of a ComputeClass, whose name is
// their value; a pod selects the class by nodeSelector.
inline constexpr std::string_view kComputeClassLabel = "cloud.google.com/compute-class";
// The taint a cordoned node carries for the scheduler.
inline constexpr std::string_view kUnschedulableTaint = "node.kubernetes.io/unschedulable";

// Whether Kubernetes sets and lifts the taint itself as a node's
// conditions change (kubernetes/api core/v1 well_known_taints.go:
// not-ready, unreachable, unschedulable, memory-, disk- and pid-pressure,
// network-unavailable; and the cloud provider's uninitialized, lifted once
// the cloud controller has initialized a new node). A node under one is
// coming back: its capacity still counts (docs/nodes.md "Candidates").
bool is_condition_taint(std::string_view key);

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };
// "NoSchedule", "PreferNoSchedule", "NoExecute".
std::string_view to_string(TaintEffect effect);
// nullopt for anything else.
std::optional<TaintEffect> taint_effect(std::string_view text);

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  friend auto operator<=>(const Taint&, const Taint&) = default;
};

// What a node's labels say about its GPUs (GPU Feature Discovery, GKE,
// Karpenter, the AMD labeller); empty when they say nothing.
struct NodeGpu {
  std::string product;        // "NVIDIA-A100-SXM4-80GB", "nvidia-l4", "a100"
  std::string product_label;  // the label it came from
  int64_t memory_bytes = 0;   // per GPU; 0: no label gives it
  std::string memory_label;   // the label it came from
  // From a ResourceSlice, not a label (slice_gpus.h): the fields above
  // name the slice's driver and attribute.
  bool from_slice = false;
  // Whose GPUs they are, as gpu_vendor_named says it; empty: not said.
  std::string_view vendor;
  friend auto operator<=>(const NodeGpu&, const NodeGpu&) = default;
};

// The GPU facts of a node's labels, first label first:
//   product: nvidia.com/gpu.product, cloud.google.com/gke-accelerator,
//            karpenter.k8s.aws/instance-gpu-name, amd.com/gpu.product-name
//   memory:  nvidia.com/gpu.memory (MiB), karpenter.k8s.aws/instance-gpu-memory
//            (MiB), amd.com/gpu.vram ("192G": GiB)
//   vendor:  the product label's domain, else its value (gke-accelerator's
//            "nvidia-l4"), else karpenter.k8s.aws/instance-gpu-manufacturer
NodeGpu node_gpu(const std::vector<std::pair<std::string, std::string>>& labels);

// The GPU vendor a name says, "NVIDIA", "AMD" or "Intel": by its domain
// (the part before a '/', or a DNS name: "nvidia.com/gpu.product",
// "gpu.amd.com", "gpu.intel.com/i915") or its first word, any case
// ("NVIDIA", "nvidia-tesla-t4", "Intel Gaudi"); empty for any other.
// A DRA claim for one vendor's GPUs is never placed on another's nodes.
std::string_view gpu_vendor_named(std::string_view name);

// Nodes that are the same to sizing.
struct NodeClass {
  // What a person calls the shape: the node.kubernetes.io/instance-type
  // label, else the first node's name.
  std::string shape;
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by key; no hostname equal to the name
  // Its nodes' kubernetes.io/hostname labels were their names (and left
  // out of labels): a requirement on the label is one on the names. False
  // when they have no such label (nodes with and without it are different
  // classes), or another value (kept in labels, matched as a label).
  bool hostname_is_name = true;
  std::vector<Taint> taints;  // sorted
  bool unschedulable = false;
  // Allocatable; a resource the node does not report is nullopt (no cap).
  std::optional<Quantity> cpu;
  std::optional<Quantity> memory;
  std::optional<Quantity> ephemeral_storage;
  // Allocatable extended resources (names with a "/"), sorted: {"nvidia.com/gpu", 8}.
  std::vector<std::pair<std::string, int64_t>> extended;
  NodeGpu gpu;
  std::vector<std::string> names;  // its nodes, sorted; empty for a pool's shape
  std::string pool;                // the nodeFit.pools entry it comes from; empty for nodes
  // A machine an autoscaler may launch, not a node: "NodePool gpu-l40s",
  // "ComputeClass l4-first" (autoscaler_pools.h). Empty for nodes.
  std::string launched_by;
  // Labels the autoscaler gives a new node the value the pod asks for (a
  // zone, a capacity type the pool leaves open), sorted: absent from
  // labels, a requirement on them holds.
  std::vector<std::string> open_labels;

  // The label's value, or nullptr.
  const std::string* label(std::string_view key) const;
  // Whether the label is one of open_labels.
  bool is_open(std::string_view key) const;
  // Allocatable count of an extended resource; 0 when the node has none.
  int64_t count(std::string_view resource) const;
  // The node's GPUs: the first of gpu_resources it has, and how many; 0 when none.
  std::pair<std::string_view, int64_t> gpus(const std::vector<std::string>& gpu_resources) const;
  // Whose GPUs it has (gpu_vendor_named): its labels' or slice's, else
  // that of an allocatable GPU resource (nvidia.com/gpu, amd.com/gpu,
  // gpu.intel.com/i915); empty: not said.
  std::string_view gpu_vendor() const;
  // Why its nodes take no new pod now, though their capacity counts:
  // "cordoned", "not-ready", "memory-pressure"; empty when nothing says so.
  std::string unavailable_now() const;
  // The shape, and for a machine an autoscaler launches which one:
  // "g6e.4xlarge of NodePool gpu-l40s".
  std::string named() const;
  // "a2-highgpu-8g (8 nvidia.com/gpu, cpu 94, memory 1300Gi, ephemeral-storage 350Gi)",
  // with "; cordoned now" (unavailable_now) when it applies; a machine an
  // autoscaler launches says which: "g6e.4xlarge of NodePool gpu-l40s (...)".
  std::string describe() const;
};

// Where an inventory came from, as /status and warnings say it.
enum class InventorySource {
  kNone,       // no nodes known: nothing is capped
  kPools,      // the policy's nodeFit.pools
  kFile,       // check --nodes FILE
  kCluster,    // serve's watch of v1/Node
  kCatalogue,  // the cloud machines a pod selects (catalogue_candidates.h)
};
std::string_view to_string(InventorySource source);

struct NodeInventory {
  InventorySource source = InventorySource::kNone;
  std::string origin;  // "nodes.yaml", "the cluster's nodes", "policy nodeFit.pools"
  // Set while the nodes may be out of date (the watch lost the API server,
  // the first list has not completed): said in a warning with each cap.
  std::string stale;
  std::vector<NodeClass> classes;
  std::size_t node_count = 0;
  // Tells inventories apart for the candidates memo (candidates.h): every
  // inventory made gets its own. An inventory is immutable once used.
  uint64_t id = next_id();

  // Classes with some of gpu_resources: the GPU shapes known.
  std::size_t gpu_shapes(const std::vector<std::string>& gpu_resources) const;

  // The inventory of nothing.
  static std::shared_ptr<const NodeInventory> none();
  static uint64_t next_id();
};

// One node as read, before it joins a class.
struct NodeInfo {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // any order
  std::vector<Taint> taints;
  bool unschedulable = false;
  std::optional<Quantity> cpu;
  std::optional<Quantity> memory;
  std::optional<Quantity> ephemeral_storage;
  std::vector<std::pair<std::string, int64_t>> extended;  // any order
};

// Builds inventories from nodes: adding, replacing or removing one node at
// a time (a watch) and taking an immutable inventory when wanted.
class InventoryBuilder {
 public:
  InventoryBuilder(InventorySource source, std::string origin);

  // Adds the node, or replaces the node of the same name. Returns whether
  // the classes changed: false when the node was known and is still in the
  // same class (a watch's MODIFIED event for a heartbeat, a condition or a
  // resourceVersion), so an inventory built now would equal the last one.
  bool upsert(NodeInfo node);
  // Returns whether the node was known (and so the classes changed).
  bool remove(std::string_view name);
  void clear();
  std::size_t size() const { return node_class_.size(); }

  // The machines autoscalers may launch (autoscaler_pools.h), kept beside
  // the nodes in every inventory built, after them.
  void set_launchable(std::vector<NodeClass> machines) { launchable_ = std::move(machines); }
  std::size_t launchable() const { return launchable_.size(); }

  // The nodes now, as classes (largest class first, then by shape), then
  // the launchable machines.
  std::shared_ptr<const NodeInventory> build(std::string stale = {}) const;

 private:
  struct Entry {
    NodeClass shape;  // names empty: the nodes are counted in members
    std::size_t members = 0;
  };
  using Classes = std::map<std::string, Entry, std::less<>>;

  InventorySource source_;
  std::string origin_;
  // Class key (everything but the name) -> class; node name -> its class.
  // A node costs its name and a pointer here, whatever its labels.
  Classes classes_;
  std::map<std::string, Classes::iterator, std::less<>> node_class_;
  std::vector<NodeClass> launchable_;
};

// The policy's nodeFit.pools as an inventory: one class per shape, labelled
// with its pool's nodeSelector, no taints, and its GPU count for every
// resource of gpuResources. Candidates are chosen from it as node fit always
// chose pools (nodes/candidates.h).
std::shared_ptr<const NodeInventory> pool_inventory(const Policy& policy);

}  // namespace gpusizer
