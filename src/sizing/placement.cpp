#include "gpusizer/sizing/placement.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "gpusizer/sizing/candidates.h"
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

// A node's own name (matchFields metadata.name, or its hostname label,
// which a class keeps as its names) differs from node to node: those
// requirements must all hold on one node of the class; labels are the
// class's.
bool by_name(const NodeRequirement& requirement, const NodeClass& node) {
  return requirement.field || (node.hostname_is_name && requirement.key == kHostnameLabel);
}

// On the class's labels; a label an autoscaler sets as the pod asks holds
// whatever the requirement.
bool label_holds(const NodeRequirement& requirement, const NodeClass& node) {
  const std::string* value = node.label(requirement.key);
  return requirement_holds(requirement, value) || (!value && node.is_open(requirement.key));
}

bool labels_hold(std::span<const NodeRequirement> requirements, const NodeClass& node) {
  return std::all_of(requirements.begin(), requirements.end(), [&](const NodeRequirement& requirement) {
    return by_name(requirement, node) || label_holds(requirement, node);
  });
}

bool asks_names(std::span<const NodeRequirement> requirements, const NodeClass& node) {
  return std::any_of(requirements.begin(), requirements.end(),
                     [&](const NodeRequirement& requirement) { return by_name(requirement, node); });
}

// The requirements on names all hold on this node name (nullptr: a pool's
// shape, whose nodes have none yet).
bool names_hold(std::span<const NodeRequirement> requirements, const NodeClass& node, const std::string* name) {
  return std::all_of(requirements.begin(), requirements.end(), [&](const NodeRequirement& requirement) {
    return !by_name(requirement, node) || requirement_holds(requirement, name);
  });
}

// The index of `name` among the class's (sorted) names, or kNoName.
constexpr std::size_t kNoName = static_cast<std::size_t>(-1);
std::size_t name_index(const NodeClass& node, std::string_view name) {
  const auto found = std::lower_bound(node.names.begin(), node.names.end(), name);
  if (found == node.names.end() || *found != name) return kNoName;
  return static_cast<std::size_t>(found - node.names.begin());
}

// A workflow's required affinity terms on one class, whatever a template
// pins: a term whose labels hold and that asks nothing of node names
// (free), and the names on which a term asking for names holds (of a
// class without names: whether one holds with none).
struct TermsOnClass {
  bool free = false;
  bool nameless = false;
  std::vector<char> names;  // per NodeClass::names
  bool any_name = false;
};

TermsOnClass terms_on(const std::vector<const std::vector<NodeRequirement>*>& terms, const NodeClass& node) {
  TermsOnClass out;
  out.names.assign(node.names.size(), 0);
  std::size_t names_left = node.names.size();
  for (const auto* term : terms) {
    if (!labels_hold(*term, node)) continue;
    if (!asks_names(*term, node)) {
      out.free = true;
      continue;
    }
    if (node.names.empty()) {
      out.nameless = out.nameless || names_hold(*term, node, nullptr);
      continue;
    }
    for (std::size_t i = 0; i < node.names.size() && names_left > 0; ++i) {
      if (out.names[i] || !names_hold(*term, node, &node.names[i])) continue;
      out.names[i] = 1;
      --names_left;
    }
  }
  out.any_name = names_left < node.names.size();
  return out;
}

// What one workflow's tolerations and required affinity say of each class
// of one inventory, worked out on first use: its templates are placed one
// after another on a thread, and may be thousands.
struct WorkflowVerdicts {
  uint64_t serial = 0;
  uint64_t inventory = 0;
  std::vector<std::vector<char>> taints_tolerated;  // per class, per taint; empty until asked
  std::vector<TermsOnClass> terms;                  // per class; empty until asked
};

WorkflowVerdicts& verdicts_of(const WorkflowFields& workflow, const NodeInventory& inventory) {
  thread_local WorkflowVerdicts verdicts;
  if (verdicts.serial != workflow.serial || verdicts.inventory != inventory.id) {
    verdicts = WorkflowVerdicts{workflow.serial, inventory.id, {}, {}};
  }
  return verdicts;
}

// Names and values from the pod in reasons: a person needs no more of them
// (a label key is at most 317 bytes), and a workflow's may be long.
std::string shown(std::string_view text) { return truncate_utf8(text, 317); }

}  // namespace

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

Placement::Placement(const Policy& policy, const PodFacts& pod)
    : pod_(pod),
      tolerations_(pod.effective_tolerations()),
      node_name_(pod.effective_node_name()),
      affinity_(pod.affinity_source()) {
  workflow_tolerations_ = pod.workflow && &tolerations_ == &pod.workflow->spec.tolerations;
  workflow_affinity_ = pod.workflow && &affinity_ == &pod.workflow->spec;
  // The ExtendedResourceToleration admission plugin: a pod asking for an
  // extended resource tolerates that resource's NoSchedule taint. A Pod
  // under review already has what the plugin adds, if it runs.
  if (policy.rule_settings.get<NodeFitPolicy>().extended_resource_toleration && !pod.tolerations_final) {
    for (const std::string& resource : policy.gpu_resources) {
      if (asks_for(resource)) added_.push_back({resource, true, "", std::string("NoSchedule")});
    }
  }
  // GKE gives a pod that selects a compute class by nodeSelector the
  // toleration of the taint its nodes carry
  // (cloud.google.com/compute-class=<name>:NoSchedule).
  if (const std::string* compute_class = pod.node_selector_value(kComputeClassLabel)) {
    added_.push_back({std::string(kComputeClassLabel), false, *compute_class, std::string("NoSchedule")});
  }
  // nodeSelector and nodeName hold with each affinity term: all of a
  // term's on one node of the class (checked together, never copied into
  // each term: a pod may have thousands of both). A term without
  // requirements matches no node; no affinity, any.
  any_term_ = !affinity_.has_affinity || affinity_.affinity_terms.empty();
  for (const NodeSelectorTerm& term : affinity_.affinity_terms) {
    if (!any_term_ && !term.requirements.empty()) terms_.push_back(&term.requirements);
  }
}

std::string Placement::signature() const {
  // Whether the pod names its node: the kubelet's rules, not the
  // scheduler's (the same name pinned by affinity is not).
  std::string out = node_name_.empty() ? "s" : "n";
  out.reserve(256);  // most pods' constraints: one allocation
  // Each string with its length, so that no value can pass for another's
  // part; a workflow's part as '#' and its serial, which no string starts with.
  const auto add = [&](std::string_view text) {
    char digits[24];
    out.append(digits, std::to_chars(std::begin(digits), std::end(digits), text.size()).ptr);
    out += ':';
    out += text;
  };
  const auto add_workflow = [&] { out += "#" + std::to_string(pod_.workflow->serial) + ";"; };
  const auto add_tolerations = [&](const std::vector<Toleration>& tolerations) {
    for (const Toleration& t : tolerations) {
      add(t.key);
      add(t.exists ? "E" : "=");
      add(t.value);
      add(t.effect ? *t.effect : "*");
    }
  };
  if (workflow_tolerations_) {
    add_workflow();
  } else {
    add_tolerations(tolerations_);
  }
  add_tolerations(added_);
  out += '|';
  for (const auto& [key, value] : pod_.node_selector) {
    add(key);
    add(value);
  }
  if (pod_.workflow && !pod_.workflow->spec.node_selector.empty()) add_workflow();
  out += '|';
  if (&node_name_ == &pod_.node_name) {
    add(node_name_);
  } else {
    add_workflow();
  }
  out += '|';
  if (any_term_) {
    out += '*';
  } else if (workflow_affinity_) {
    add_workflow();
  } else {
    for (const auto* term : terms_) {
      for (const NodeRequirement& r : *term) {
        add(r.key);
        add(std::to_string(static_cast<int>(r.op)) + (r.field ? "f" : "l"));
        out += std::to_string(r.values.size()) + "v";
        for (const std::string& value : r.values) add(value);
      }
      out += '|';
    }
  }
  return out;
}

Placement::Pinned Placement::pinned_on(const NodeClass& node) const {
  Pinned pinned;
  const auto pin = [&](std::string_view name) {
    if (pinned.names_asked && pinned.name != name) pinned.contradictory = true;
    pinned.names_asked = true;
    pinned.name = name;
  };
  // Entries that hold are labels of the class, each another: the walk
  // stops after as many as the class has labels, however many are written.
  pod_.every_node_selector_entry([&](const std::string& key, const std::string& value) {
    if (node.hostname_is_name && key == kHostnameLabel) {
      pin(value);
      return true;
    }
    const std::string* label = node.label(key);
    pinned.labels = label ? *label == value : node.is_open(key);
    return pinned.labels;
  });
  if (!node_name_.empty()) pin(node_name_);
  return pinned;
}

bool Placement::matches_a_term(const NodeInventory& inventory, std::size_t index, const Pinned& pinned) const {
  const NodeClass& node = inventory.classes[index];
  if (!pinned.labels) return false;
  // The node the pinned name names, if the class has it (a class without
  // names holds no pinned name).
  const std::size_t named = pinned.names_asked && !pinned.contradictory ? name_index(node, pinned.name) : kNoName;
  const bool pinned_ok = !pinned.names_asked || named != kNoName;
  if (any_term_) return pinned_ok;
  if (workflow_affinity_) {
    WorkflowVerdicts& verdicts = verdicts_of(*pod_.workflow, inventory);
    if (verdicts.terms.empty()) {
      for (const NodeClass& each : inventory.classes) verdicts.terms.push_back(terms_on(terms_, each));
    }
    const TermsOnClass& terms = verdicts.terms[index];
    if (!pinned.names_asked) return terms.free || (node.names.empty() ? terms.nameless : terms.any_name);
    return named != kNoName && (terms.free || terms.names[named]);
  }
  return std::any_of(terms_.begin(), terms_.end(), [&](const auto* term) {
    if (!labels_hold(*term, node)) return false;
    if (!asks_names(*term, node)) return pinned_ok;
    if (pinned.names_asked) return named != kNoName && names_hold(*term, node, &node.names[named]);
    if (node.names.empty()) return names_hold(*term, node, nullptr);
    return std::any_of(node.names.begin(), node.names.end(),
                       [&](const std::string& name) { return names_hold(*term, node, &name); });
  });
}

bool Placement::tolerated(const NodeInventory& inventory, std::size_t index, std::size_t taint) const {
  const Taint& of_node = inventory.classes[index].taints[taint];
  if (tolerates(added_, of_node)) return true;
  if (!workflow_tolerations_) return tolerates(tolerations_, of_node);
  WorkflowVerdicts& verdicts = verdicts_of(*pod_.workflow, inventory);
  if (verdicts.taints_tolerated.empty()) {
    for (const NodeClass& node : inventory.classes) {
      std::vector<char> each;
      for (const Taint& t : node.taints) each.push_back(tolerates(tolerations_, t) ? 1 : 0);
      verdicts.taints_tolerated.push_back(std::move(each));
    }
  }
  return verdicts.taints_tolerated[index][taint] != 0;
}

// A cordon (spec.unschedulable and its taint) and the other taints of a
// node's conditions (not-ready, pressure) keep no pod out: they are lifted
// when the node comes back, and a pod sized past such a node could not run
// on it then (docs/nodes.md "Candidates").
bool Placement::keeps_out(const NodeInventory& inventory, std::size_t index, std::size_t taint) const {
  const Taint& of_node = inventory.classes[index].taints[taint];
  if (of_node.effect == TaintEffect::kPreferNoSchedule || is_condition_taint(of_node.key)) return false;
  if (!node_name_.empty() && of_node.effect == TaintEffect::kNoSchedule) return false;
  return !tolerated(inventory, index, taint);
}

bool Placement::placeable(const NodeInventory& inventory, std::size_t index) const {
  const NodeClass& node = inventory.classes[index];
  if (!matches_a_term(inventory, index, pinned_on(node))) return false;
  for (std::size_t taint = 0; taint < node.taints.size(); ++taint) {
    if (keeps_out(inventory, index, taint)) return false;
  }
  return true;
}

std::string Placement::reason(const NodeInventory& inventory, std::size_t index) const {
  const NodeClass& node = inventory.classes[index];
  // The first nodeSelector entry (then nodeName) no node of the class meets.
  std::string unmet;
  const auto has_name = [&](std::string_view name) { return name_index(node, name) != kNoName; };
  pod_.every_node_selector_entry([&](const std::string& key, const std::string& value) {
    const std::string* label = node.label(key);
    const bool met = node.hostname_is_name && key == kHostnameLabel ? has_name(value)
                     : label                                        ? *label == value
                                                                    : node.is_open(key);
    if (!met) unmet = "do not match nodeSelector " + shown(key) + "=" + shown(value);
    return met;
  });
  if (unmet.empty() && !node_name_.empty() && !has_name(node_name_))
    unmet = "are not spec.nodeName " + shown(node_name_);
  if (!unmet.empty()) return unmet;
  if (!matches_a_term(inventory, index, pinned_on(node))) {
    return affinity_.has_affinity ? "do not match the node affinity"
                                  : "do not match nodeSelector and nodeName together";
  }
  for (std::size_t taint = 0; taint < node.taints.size(); ++taint) {
    if (!keeps_out(inventory, index, taint)) continue;
    const Taint& t = node.taints[taint];
    return "have taint " + t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + std::string(to_string(t.effect)) +
           ", not tolerated";
  }
  return {};
}

bool Placement::asks_for(std::string_view resource) const {
  const auto asks = [&](const std::vector<ContainerFacts>& list) {
    return std::any_of(list.begin(), list.end(), [&](const ContainerFacts& c) { return c.gpu_resource == resource; });
  };
  return asks(pod_.app) || asks(pod_.init);
}

}  // namespace gpusizer
