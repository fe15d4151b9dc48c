#include "gpusizer/sizing/candidates.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "gpusizer/sizing/node_fit.h"
#include "gpusizer/sizing/placement.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

// The pod's GPU resource: its first GPU container's.
std::string pod_gpu_resource(const PodFacts& pod, const Policy& policy) {
  for (const auto* list : {&pod.app, &pod.init}) {
    for (const ContainerFacts& c : *list) {
      if (!c.gpu_resource.empty()) return c.gpu_resource;
    }
  }
  return policy.gpu_resources.empty() ? std::string() : policy.gpu_resources.front();
}

// The pod's GPUs all come from DRA claims: no node reports them as
// allocatable (a DRA driver publishes ResourceSlices instead).
bool gpus_by_claim(const PodFacts& pod) {
  bool claimed = false;
  for (const auto* list : {&pod.app, &pod.init}) {
    for (const ContainerFacts& c : *list) {
      if (!c.gpu_resource.empty()) return false;
      claimed = claimed || c.claim_gpus > 0;
    }
  }
  return claimed;
}

// Whose GPUs the pod's claims ask for (gpu_vendor_named): the device
// class's domain ("gpu.amd.com"), else the policy's vendor for it; empty
// when an ask counted as GPUs says none, or two asks say different ones.
std::string_view claimed_gpu_vendor(const PodFacts& pod) {
  std::string_view found;
  bool said = true;
  const auto take = [&](std::string_view name, const AcceleratorClass& of) {
    if (of.sizing != AcceleratorSizing::kGpus) return;
    std::string_view vendor = gpu_vendor_named(name);
    if (vendor.empty()) vendor = gpu_vendor_named(of.vendor);
    said = said && !vendor.empty() && (found.empty() || found == vendor);
    found = vendor;
  };
  for (const ClaimUse& use : pod.claim_uses) {
    for (const AcceleratorAsk& ask : use.asks) take(ask.name, *ask.of);
  }
  for (const auto* list : {&pod.app, &pod.init}) {
    for (const ContainerFacts& c : *list) {
      for (const auto& [resource, of] : c.device_class_resources) take(of->device_class, *of);
    }
  }
  return said ? found : std::string_view();
}

// A node a claim for the vendor's GPUs may land on: one whose GPUs are not
// said to be another vendor's.
bool vendor_may_serve(const NodeClass& node, std::string_view vendor) {
  const std::string_view has = node.gpu_vendor();
  return vendor.empty() || has.empty() || has == vendor;
}

// "12 shapes: 9 have fewer than 8 nvidia.com/gpu, 3 have taint ..."
std::string why_none(const std::map<std::string, std::size_t>& reasons, std::size_t classes) {
  std::vector<std::pair<std::size_t, std::string>> counted;
  for (const auto& [reason, count] : reasons) counted.emplace_back(count, reason);
  std::stable_sort(counted.begin(), counted.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> parts;
  for (const auto& [count, reason] : counted) parts.push_back(std::to_string(count) + " " + reason);
  return std::to_string(classes) + (classes == 1 ? " node shape: " : " node shapes: ") + join(parts, ", ");
}

}  // namespace

bool tolerates(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) {
    if (t.effect && !t.effect->empty() && *t.effect != to_string(taint.effect)) return false;
    if (t.key.empty()) return t.exists;  // an empty key with Exists tolerates everything
    return t.key == taint.key && (t.exists || t.value == taint.value);
  });
}

namespace {

// The candidates of one pod's constraints, as class indices (valid for any
// inventory with the same id).
struct Memo {
  std::vector<std::size_t> placeable;
  std::vector<std::size_t> nodes;
  std::vector<std::size_t> shapes;
  bool gpu_nodes_unknown = false;
  std::string why_none;
  std::optional<std::size_t> pool;  // index into the policy's nodeFit.pools
};

// Decisions on one server thread see the same few pod shapes against the
// same inventory again and again: their candidates are kept per thread
// until the inventory changes (a watch event) or too many shapes are seen.
class CandidateMemo {
 public:
  const Memo* find(uint64_t inventory, const std::string& key) {
    if (inventory != inventory_) {
      memos_.clear();
      inventory_ = inventory;
    }
    const auto found = memos_.find(key);
    return found == memos_.end() ? nullptr : &found->second;
  }
  void keep(std::string key, Memo memo) {
    if (memos_.size() >= kMaxShapes) memos_.clear();
    memos_.emplace(std::move(key), std::move(memo));
  }

 private:
  static constexpr std::size_t kMaxShapes = 256;
  uint64_t inventory_ = 0;
  std::map<std::string, Memo, std::less<>> memos_;
};

// Whether the pod's nodeSelector rules out a policy pool's shape (it
// carries the pool's nodeSelector as labels): a pod that selects no pool
// may run on the pools that do not name another value of a key it selects
// (a pod pinned to g6e.4xlarge is not the n1-standard-8 pool's).
bool contradicts(const NodeClass& shape, const PodFacts& pod) {
  return std::any_of(shape.labels.begin(), shape.labels.end(), [&](const auto& label) {
    const std::string* value = pod.node_selector_value(label.first);
    return value && *value != label.second;
  });
}

Memo choose(const NodeInventory& inventory, const Policy& policy, const PodFacts& pod, const Placement& placement,
            const std::string& gpu_resource, int64_t gpus, bool by_claim, std::string_view vendor) {
  Memo memo;
  const bool pools = inventory.source == InventorySource::kPools;
  const auto& classes = inventory.classes;
  const NodePool* pool = pools ? pod_pool(policy.rule_settings.get<NodeFitPolicy>(), pod) : nullptr;
  if (pool) memo.pool = static_cast<std::size_t>(pool - policy.rule_settings.get<NodeFitPolicy>().pools.data());
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const bool placeable = pools ? (pool ? classes[i].pool == pool->name : !contradicts(classes[i], pod))
                                 : placement.placeable(inventory, i);
    if (!placeable) continue;
    memo.placeable.push_back(i);
    // GPUs by claim: the nodes whose labels say they have GPUs, of the
    // claims' vendor where both say one.
    if (by_claim ? !classes[i].gpu.product.empty() && vendor_may_serve(classes[i], vendor)
                 : classes[i].count(gpu_resource) >= gpus) {
      memo.nodes.push_back(i);
    }
  }
  // ... and when no label says so (a driver without GPU Feature
  // Discovery), every node the pod may be placed on but those with another
  // vendor's GPUs: caps never go past the largest of them.
  if (by_claim && memo.nodes.empty()) {
    std::copy_if(memo.placeable.begin(), memo.placeable.end(), std::back_inserter(memo.nodes),
                 [&](std::size_t i) { return vendor_may_serve(classes[i], vendor); });
    memo.gpu_nodes_unknown = !memo.nodes.empty();
  }
  if (!memo.nodes.empty()) {
    const auto same_shape = [&](std::size_t a, std::size_t b) {
      return classes[a].cpu == classes[b].cpu && classes[a].memory == classes[b].memory &&
             classes[a].ephemeral_storage == classes[b].ephemeral_storage &&
             classes[a].count(gpu_resource) == classes[b].count(gpu_resource);
    };
    for (std::size_t i : memo.nodes) {
      if (std::none_of(memo.shapes.begin(), memo.shapes.end(), [&](std::size_t seen) { return same_shape(seen, i); })) {
        memo.shapes.push_back(i);
      }
    }
    return memo;
  }
  // None: say why each was left out (rare, so the words are made only here).
  std::map<std::string, std::size_t> reasons;
  std::size_t considered = memo.placeable.size();
  if (!pools) {
    for (std::size_t i = 0; i < classes.size(); ++i) {
      if (std::string reason = placement.reason(inventory, i); !reason.empty()) ++reasons[std::move(reason)];
    }
    considered = classes.size();
  }
  if (by_claim) {
    // Only another vendor's GPUs leave a claim's pod no node.
    for (std::size_t i : memo.placeable) {
      ++reasons["have " + std::string(classes[i].gpu_vendor()) + " GPUs, not " + std::string(vendor)];
    }
  } else if (!memo.placeable.empty()) {
    reasons["have fewer than " + std::to_string(gpus) + " " + gpu_resource] += memo.placeable.size();
  }
  if (considered > 0) memo.why_none = why_none(reasons, considered);
  return memo;
}

}  // namespace

std::string shared_replicas(const Candidates& candidates) {
  if (candidates.nodes.empty() || candidates.inventory->source == InventorySource::kPools) return {};
  std::string said;
  for (const NodeClass* node : candidates.nodes) {
    const std::string* replicas = node->label("nvidia.com/gpu.replicas");
    const std::string* product = node->label("nvidia.com/gpu.product");
    const bool many = replicas && read_whole(*replicas, 2).ok();
    const bool renamed = product && product->size() > 7 && product->ends_with("-SHARED");
    if (!many && !renamed) return {};
    if (said.empty()) {
      said =
          (many ? "nvidia.com/gpu.replicas=" + *replicas : "nvidia.com/gpu.product=" + *product) + ", " + node->shape;
    }
  }
  return said;
}

std::string candidate_gpu_resource(const PodFacts& pod, const Policy& policy) {
  return gpus_by_claim(pod) ? std::string(kClaimedGpus) : pod_gpu_resource(pod, policy);
}

Candidates candidate_nodes(const NodeInventory& inventory, const Policy& policy, const PodFacts& pod, int64_t gpus) {
  Candidates out;
  out.inventory = &inventory;
  const bool by_claim = gpus_by_claim(pod);
  out.gpu_resource = candidate_gpu_resource(pod, policy);
  out.gpus = gpus;
  if (inventory.classes.empty()) return out;
  const Placement placement(policy, pod);
  // The pool a pod names or selects decides the candidates among pools.
  const NodePool* pool =
      inventory.source == InventorySource::kPools ? pod_pool(policy.rule_settings.get<NodeFitPolicy>(), pod) : nullptr;
  const std::string_view vendor = by_claim ? claimed_gpu_vendor(pod) : std::string_view();
  std::string key = out.gpu_resource + '\x1e' + std::to_string(gpus) + '\x1e' + (pool ? pool->name : "") + '\x1e' +
                    std::string(vendor) + '\x1e' + placement.signature();
  thread_local CandidateMemo memo;
  const Memo* found = memo.find(inventory.id, key);
  Memo made;
  if (!found) {
    made = choose(inventory, policy, pod, placement, out.gpu_resource, gpus, by_claim, vendor);
    memo.keep(std::move(key), made);
    found = &made;
  }
  for (std::size_t i : found->placeable) out.placeable.push_back(&inventory.classes[i]);
  for (std::size_t i : found->nodes) out.nodes.push_back(&inventory.classes[i]);
  for (std::size_t i : found->shapes) out.shapes.push_back(&inventory.classes[i]);
  out.gpu_nodes_unknown = found->gpu_nodes_unknown;
  out.why_none = found->why_none;
  if (found->pool && *found->pool < policy.rule_settings.get<NodeFitPolicy>().pools.size())
    out.pool = &policy.rule_settings.get<NodeFitPolicy>().pools[*found->pool];
  return out;
}

}  // namespace gpusizer
