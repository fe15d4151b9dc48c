// Whether a pod may be placed on a node class, as the scheduler's filters
// would decide (candidates.h says which filters): the pod's constraints
// made once, then tried on each class. An Argo template's pod takes what
// its template does not set from its workflow (PodFacts::workflow); what
// the workflow's constraints say of each class is worked out once per
// workflow, not once per template, so that a workflow of thousands of
// templates under large workflow-wide tolerations or affinity costs what
// its templates' own constraints cost. Pure: no I/O.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// Whether a node with the label's value (nullptr: no such label) meets the
// requirement, as the scheduler's node affinity decides.
bool requirement_holds(const NodeRequirement& requirement, const std::string* value);

class Placement {
 public:
  // REQUIRES: pod outlives the placement.
  Placement(const Policy& policy, const PodFacts& pod);

  // Everything placeable() reads of the pod, as one string: pods that
  // write the same constraints get the same answers. A workflow's part is
  // named by its serial, so the string is as long as the template's own.
  std::string signature() const;
  // Whether the pod may be placed on the class, whatever its GPUs.
  // REQUIRES: node is inventory.classes[index], and every call on one
  // placement passes the same inventory.
  bool placeable(const NodeInventory& inventory, std::size_t index) const;
  // Why it may not, as a person reads it: "do not match nodeSelector
  // zone=a"; empty when it may.
  std::string reason(const NodeInventory& inventory, std::size_t index) const;

 private:
  // The nodeSelector and nodeName on one class: whether the labels they
  // ask for hold, and the node name they pin (a nodeName, or a hostname
  // nodeSelector where the class keeps hostnames as names), if any.
  struct Pinned {
    bool labels = true;
    bool names_asked = false;
    std::string_view name;
    bool contradictory = false;  // two different names pinned: no node
  };
  Pinned pinned_on(const NodeClass& node) const;
  bool matches_a_term(const NodeInventory& inventory, std::size_t index, const Pinned& pinned) const;
  bool tolerated(const NodeInventory& inventory, std::size_t index, std::size_t taint) const;
  bool keeps_out(const NodeInventory& inventory, std::size_t index, std::size_t taint) const;
  bool asks_for(std::string_view resource) const;

  const PodFacts& pod_;
  const std::vector<Toleration>& tolerations_;  // the pod's or its workflow's
  bool workflow_tolerations_ = false;           // tolerations_ are the workflow's
  std::vector<Toleration> added_;               // by the ExtendedResourceToleration plugin
  const std::string& node_name_;                // the pod's or its workflow's
  const PodFacts& affinity_;                    // the pod, or its workflow's spec, whose affinity applies
  bool workflow_affinity_ = false;
  bool any_term_ = false;                                   // no required affinity: the pinned alone
  std::vector<const std::vector<NodeRequirement>*> terms_;  // ORed; each ANDed with the pinned
};

}  // namespace gpusizer
