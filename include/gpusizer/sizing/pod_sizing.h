// The decider: what one pod needs and what to say about it, before any
// JSON. It runs the rules of sizing_rules() in order (floor rules, then,
// where they can matter, check rules on the pod as the floors size it),
// takes the binding floor of each resource of each phase, finds the
// containers below their share of it, and builds from the rules' typed
// results alone the pod's report (denials and warnings, by mode), what
// mutate mode changes, and the explanation `gpu-sizer explain` prints.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpusizer/sizing/history.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/rule.h"

namespace gpusizer {

struct SizingOptions {
  bool report = false;   // fill PodSizing::report (the validating endpoint); runs the check rules
  bool fix = false;      // fill PodSizing::fixes when mutate mode may change the pod (the mutating endpoint)
  bool explain = false;  // fill PodSizing::explanation; runs the check rules
  // The nodes known (the cluster's, a --nodes file); nullptr or none: the
  // policy's nodeFit.pools, if any.
  const NodeInventory* nodes = nullptr;
  // What earlier runs used (sizing/history.h); nullptr: none read.
  const HistorySnapshot* history = nullptr;
};

// What the validating endpoint answers for the pod, in report order (by
// DenialReason): each denial names what to set; each warning is under 120
// characters. Audit mode denies nothing and says what it would do.
struct PodReport {
  std::vector<std::string> denials;
  std::vector<DenialReason> denial_reasons;  // one per denial
  std::vector<std::string> warnings;
};

// Each GPU container's requests once sized, and the pod's spec.resources
// when it sets cpu or memory, as explain prints them.
struct ContainerRow {
  std::string container;  // its name; "spec.resources" for the pod-level row
  std::string requests;   // "cpu 32, memory 192Gi, ephemeral-storage 300Gi", or "-"
  std::string detail;     // "requests it runs with (4 GPUs)"
  bool pod_level = false;
};

// The floor that binds the app phase's memory, and why.
struct BindingRow {
  std::string floor;   // "memory 241Gi"
  std::string detail;  // the binding floor's arithmetic, or its basis
};

// One accelerator ask of the pod (its demand model), as explain prints it.
struct AskRow {
  std::string holder;  // `container "trainer"`, or "pod"
  std::string ask;     // "4 nvidia.com/gpu"
  std::string detail;  // "GPU, nvidia; counted as 4 GPUs; spec.containers[0].resources.limits"
};

struct Explanation {
  std::vector<AskRow> asks;           // filled by the admission layer, which knows the fields
  std::vector<RuleRow> rules;         // in rule order
  std::optional<BindingRow> binding;  // absent when the app phase has no floor
  std::vector<ContainerRow> containers;
};

struct PodSizing {
  const Profile* profile = nullptr;  // nullptr when the profile cannot be chosen
  std::string profile_reason;
  // The input is wrong (unreadable fields, an unknown profile, a malformed
  // annotation): mutate mode changes nothing until it is fixed.
  bool blocked = false;
  PodReport report;
  // What mutate mode changes, in order: each container's requests (and
  // limits), then each rule's fix. Empty unless options.fix and the pod
  // may be changed (mutate mode, not opted out, not blocked).
  std::vector<Fix> fixes;
  Explanation explanation;
  // The resources whose binding floor a node cap lowered, one per phase
  // and resource, for metrics.
  std::vector<std::string_view> capped;
  // How many candidate node shapes hold the pod as it was given (before
  // any change); nullopt when no nodes are known.
  std::optional<std::size_t> nodes_holding;
  // The history rule's floor binds the app phase's memory (rules/history_rule.h).
  bool history_binds = false;
};

// Decides one pod. `problems` are what reading it found wrong, each denied
// (DenialReason::kInvalid) with its message. REQUIRES: phases came from
// pod_phases(pod).
PodSizing size_pod(const Policy& policy, const PodFacts& pod, const PodPhases& phases,
                   std::span<const Problem> problems, const SizingOptions& options);

}  // namespace gpusizer
