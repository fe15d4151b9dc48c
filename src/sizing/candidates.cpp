#include "gpusizer/sizing/candidates.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <span>

#include "gpusizer/sizing/node_fit.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

// A label value as the scheduler reads it for Gt and Lt: an int64
// (strconv.ParseInt); nullopt for anything else.
std::optional<int64_t> whole(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool requirement_holds(const NodeRequirement& requirement, const std::string* value) {
  const auto& values = requirement.values;
  const auto listed = [&] { return value && std::find(values.begin(), values.end(), *value) != values.end(); };
  switch (requirement.op) {
    case NodeRequirement::Op::kIn: return listed();
    case NodeRequirement::Op::kNotIn: return !listed();
    case NodeRequirement::Op::kExists: return value != nullptr;
    case NodeRequirement::Op::kDoesNotExist: return value == nullptr;
    case NodeRequirement::Op::kGt:
    case NodeRequirement::Op::kLt: {
      if (!value || values.size() != 1) return false;
      const auto have = whole(*value);
      const auto bound = whole(values.front());
      if (!have || !bound) return false;
      return requirement.op == NodeRequirement::Op::kGt ? *have > *bound : *have < *bound;
    }
  }
  return false;
}

// Some node of the class meets every requirement of both lists.
bool all_on_one_node(std::span<const NodeRequirement> first, std::span<const NodeRequirement> second,
                     const NodeClass& node) {
  // A node's own name (matchFields metadata.name, or its hostname label,
  // which a class keeps as its names) differs from node to node: those
  // requirements must all hold on one node of the class; labels are the
  // class's.
  const auto by_name = [&](const NodeRequirement& requirement) {
    return requirement.field || (node.hostname_is_name && requirement.key == kHostnameLabel);
  };
  bool names_asked = false;
  for (const auto requirements : {first, second}) {
    for (const NodeRequirement& requirement : requirements) {
      if (by_name(requirement)) {
        names_asked = true;
      } else if (!requirement_holds(requirement, node.label(requirement.key))) {
        return false;
      }
    }
  }
  if (!names_asked) return true;
  const auto all_hold = [&](const std::string* name) {
    const auto holds = [&](const NodeRequirement& requirement) {
      return !by_name(requirement) || requirement_holds(requirement, name);
    };
    return std::all_of(first.begin(), first.end(), holds) && std::all_of(second.begin(), second.end(), holds);
  };
  if (node.names.empty()) return all_hold(nullptr);
  return std::any_of(node.names.begin(), node.names.end(), [&](const std::string& name) { return all_hold(&name); });
}

// The pod's placement constraints, made once and tried on each class.
class Filter {
 public:
  Filter(const Policy& policy, const PodFacts& pod) : pod_(pod), tolerations_(pod.tolerations) {
    // The ExtendedResourceToleration admission plugin: a pod asking for an
    // extended resource tolerates that resource's NoSchedule taint. A Pod
    // under review already has what the plugin adds, if it runs.
    if (policy.node_fit.extended_resource_toleration && !pod.tolerations_final) {
      for (const std::string& resource : policy.gpu_resources) {
        if (asks_for(resource)) tolerations_.push_back({resource, true, "", std::string("NoSchedule")});
      }
    }
    for (const auto& [key, value] : pod.node_selector) pinned_.push_back({key, NodeRequirement::Op::kIn, {value}});
    if (!pod.node_name.empty()) pinned_.push_back({"metadata.name", NodeRequirement::Op::kIn, {pod.node_name}, true});
    // nodeSelector and nodeName hold with each affinity term: all of a
    // term's on one node of the class (checked together, never copied into
    // each term: a pod may have thousands of both). A term without
    // requirements matches no node; no affinity, any.
    any_term_ = !pod.has_affinity || pod.affinity_terms.empty();
    for (const NodeSelectorTerm& term : pod.affinity_terms) {
      if (!any_term_ && !term.requirements.empty()) terms_.push_back(&term.requirements);
    }
  }

  // Everything placeable() reads of the pod, as one string: pods that
  // write the same constraints get the same candidates.
  std::string signature() const {
    // Whether the pod names its node: the kubelet's rules, not the
    // scheduler's (the same name pinned by affinity is not).
    std::string out = pod_.node_name.empty() ? "s" : "n";
    const auto add = [&](std::string_view text) {
      out += text;
      out += '\x1f';
    };
    for (const Toleration& t : tolerations_) {
      add(t.key);
      add(t.exists ? "E" : "=");
      add(t.value);
      add(t.effect ? *t.effect : "*");
    }
    out += '\x1e';
    const auto add_requirements = [&](const std::vector<NodeRequirement>& requirements) {
      for (const NodeRequirement& r : requirements) {
        add(r.key);
        add(std::to_string(static_cast<int>(r.op)) + (r.field ? "f" : "l"));
        for (const std::string& value : r.values) add(value);
        out += '\x1d';
      }
      out += '\x1e';
    };
    add_requirements(pinned_);
    out += any_term_ ? "*" : "";
    for (const auto* term : terms_) add_requirements(*term);
    return out;
  }

  // Whether the pod may be placed on the node, whatever its GPUs.
  bool placeable(const NodeClass& node) const {
    if (cordoned(node)) return false;
    return matches_a_term(node) &&
           std::all_of(node.taints.begin(), node.taints.end(), [&](const Taint& taint) { return !keeps_out(taint); });
  }

  // Why it may not, as a person reads it (only asked when no class may).
  std::string reason(const NodeClass& node) const {
    if (cordoned(node)) return "are cordoned (unschedulable)";
    for (const NodeRequirement& requirement : pinned_) {
      if (matches(requirement, node)) continue;
      return requirement.field ? "are not spec.nodeName " + pod_.node_name
                               : "do not match nodeSelector " + requirement.key + "=" + requirement.values.front();
    }
    if (!matches_a_term(node)) {
      return pod_.has_affinity ? "do not match the node affinity" : "do not match nodeSelector and nodeName together";
    }
    for (const Taint& taint : node.taints) {
      if (!keeps_out(taint)) continue;
      return "have taint " + taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" +
             std::string(to_string(taint.effect)) + ", not tolerated";
    }
    return {};
  }

 private:
  // Some node of the class meets the pinned requirements with one of the terms.
  bool matches_a_term(const NodeClass& node) const {
    if (any_term_) return all_on_one_node(pinned_, {}, node);
    return std::any_of(terms_.begin(), terms_.end(),
                       [&](const auto* term) { return all_on_one_node(*term, pinned_, node); });
  }

  // A pod that names its node skips the scheduler: the kubelet admits it
  // on a cordoned node and minds NoExecute taints only. Others are kept
  // off a cordoned node unless they tolerate its unschedulable taint.
  bool cordoned(const NodeClass& node) const {
    return node.unschedulable && pod_.node_name.empty() &&
           !tolerates(tolerations_, Taint{std::string(kUnschedulableTaint), "", TaintEffect::kNoSchedule});
  }
  bool keeps_out(const Taint& taint) const {
    if (taint.effect == TaintEffect::kPreferNoSchedule) return false;
    if (!pod_.node_name.empty() && taint.effect == TaintEffect::kNoSchedule) return false;
    return !tolerates(tolerations_, taint);
  }

  bool asks_for(std::string_view resource) const {
    const auto asks = [&](const std::vector<ContainerFacts>& list) {
      return std::any_of(list.begin(), list.end(), [&](const ContainerFacts& c) { return c.gpu_resource == resource; });
    };
    return asks(pod_.app) || asks(pod_.init);
  }

  const PodFacts& pod_;
  std::vector<Toleration> tolerations_;
  std::vector<NodeRequirement> pinned_;                     // nodeSelector and nodeName
  bool any_term_ = false;                                   // no required affinity: pinned_ alone
  std::vector<const std::vector<NodeRequirement>*> terms_;  // the pod's, ORed; each ANDed with pinned_
};

// The pod's GPU resource: its first GPU container's.
std::string pod_gpu_resource(const PodFacts& pod, const Policy& policy) {
  for (const auto* list : {&pod.app, &pod.init}) {
    for (const ContainerFacts& c : *list) {
      if (!c.gpu_resource.empty()) return c.gpu_resource;
    }
  }
  return policy.gpu_resources.empty() ? std::string() : policy.gpu_resources.front();
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

bool some_node_matches(const std::vector<NodeRequirement>& requirements, const NodeClass& node) {
  return all_on_one_node(requirements, {}, node);
}

bool matches(const NodeRequirement& requirement, const NodeClass& node) {
  return some_node_matches({requirement}, node);
}

bool matches_affinity(const std::vector<NodeSelectorTerm>& terms, const NodeClass& node) {
  if (terms.empty()) return true;
  return std::any_of(terms.begin(), terms.end(), [&](const NodeSelectorTerm& term) {
    return !term.requirements.empty() && some_node_matches(term.requirements, node);
  });
}

namespace {

// The candidates of one pod's constraints, as class indices (valid for any
// inventory with the same id).
struct Memo {
  std::vector<std::size_t> placeable;
  std::vector<std::size_t> nodes;
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

Memo choose(const NodeInventory& inventory, const Policy& policy, const PodFacts& pod, const Filter& filter,
            const std::string& gpu_resource, int64_t gpus) {
  Memo memo;
  const bool pools = inventory.source == InventorySource::kPools;
  const auto& classes = inventory.classes;
  const NodePool* pool = pools ? pod_pool(policy.node_fit, pod.selection.labels, pod.node_selector) : nullptr;
  if (pool) memo.pool = static_cast<std::size_t>(pool - policy.node_fit.pools.data());
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const bool placeable = pools ? !pool || classes[i].pool == pool->name : filter.placeable(classes[i]);
    if (!placeable) continue;
    memo.placeable.push_back(i);
    if (classes[i].count(gpu_resource) >= gpus) memo.nodes.push_back(i);
  }
  if (!memo.nodes.empty()) return memo;
  // None: say why each was left out (rare, so the words are made only here).
  std::map<std::string, std::size_t> reasons;
  std::size_t considered = memo.placeable.size();
  if (!pools) {
    for (const NodeClass& node : classes) {
      if (std::string reason = filter.reason(node); !reason.empty()) ++reasons[std::move(reason)];
    }
    considered = classes.size();
  }
  if (!memo.placeable.empty()) {
    reasons["have fewer than " + std::to_string(gpus) + " " + gpu_resource] += memo.placeable.size();
  }
  if (considered > 0) memo.why_none = why_none(reasons, considered);
  return memo;
}

}  // namespace

Candidates candidate_nodes(const NodeInventory& inventory, const Policy& policy, const PodFacts& pod, int64_t gpus) {
  Candidates out;
  out.inventory = &inventory;
  out.gpu_resource = pod_gpu_resource(pod, policy);
  out.gpus = gpus;
  if (inventory.classes.empty()) return out;
  const Filter filter(policy, pod);
  // The pool a pod names or selects decides the candidates among pools.
  const NodePool* pool = inventory.source == InventorySource::kPools
                             ? pod_pool(policy.node_fit, pod.selection.labels, pod.node_selector)
                             : nullptr;
  std::string key = out.gpu_resource + '\x1e' + std::to_string(gpus) + '\x1e' + (pool ? pool->name : "") + '\x1e' +
                    filter.signature();
  thread_local CandidateMemo memo;
  const Memo* found = memo.find(inventory.id, key);
  Memo made;
  if (!found) {
    made = choose(inventory, policy, pod, filter, out.gpu_resource, gpus);
    memo.keep(std::move(key), made);
    found = &made;
  }
  for (std::size_t i : found->placeable) out.placeable.push_back(&inventory.classes[i]);
  for (std::size_t i : found->nodes) out.nodes.push_back(&inventory.classes[i]);
  out.why_none = found->why_none;
  if (found->pool && *found->pool < policy.node_fit.pools.size()) out.pool = &policy.node_fit.pools[*found->pool];
  return out;
}

}  // namespace gpusizer
