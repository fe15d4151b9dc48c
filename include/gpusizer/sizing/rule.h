// A sizing rule: one idea about what a GPU pod needs (the GPU table, its
// /dev/shm, its data loader's buffers, its model's GPU memory, a node that
// holds it), behind one interface. A rule reads the pod's facts and the
// policy and returns a typed result: the floors it sets, what it found,
// what mutate mode changes for it, and its row of `gpu-sizer explain`. The
// decider (sizing/pod_sizing.h) runs the rules in the order of
// sizing_rules() and builds patches, denials, warnings, metrics and explain
// from these results alone, so none of them can drift from the decision.
//
// Adding a rule: a new RuleKind and its name below, a class in
// src/sizing/rules/<name>_rule.cpp (header in
// include/gpusizer/sizing/rules/) with its settings if it has any
// (rule_settings.h), one line in sizing_rules()
// (src/sizing/rules/rule_list.cpp), and its tests.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/candidates.h"
#include "gpusizer/sizing/node_fit.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/rule_settings.h"

namespace gpusizer {

struct HistorySnapshot;

enum class RuleKind { kTable, kSharedMemory, kDataLoader, kHistory, kOffload, kNodeCaps, kGpuMemory, kNodeFit };
// As explain names the rule: "table", "/dev/shm", "data loader", "history", "offload", "node caps", "GPU memory",
// "node fit".
std::string_view rule_name(RuleKind rule);

// Why a pod is denied (or, in audit mode, would be), and the order in which
// findings are reported: input that cannot be read first, then each rule's.
// kNodeCap only warns: a floor lowered so that a node holds the pod.
enum class DenialReason { kInvalid, kUnknownProfile, kMaxGpus, kMemory, kNodeCap, kShm, kVram, kNodeFit };
// The metric label value: "invalid", "unknown_profile", "max_gpus", "memory",
// "node_cap", "shm", "vram", "node_fit".
std::string_view to_string(DenialReason reason);

// What one phase of a pod needs of one resource, in all, for its GPUs.
struct Floor {
  std::size_t phase = 0;      // index into PodPhases::phases
  std::string_view resource;  // kCpu, kMemory or kEphemeralStorage
  Quantity amount;
  std::string basis;       // why, in a few words: "train profile", "data loader"
  std::string arithmetic;  // how, in full, for denials; empty when the basis says it
  // The warning to give once when this floor binds and a container is
  // below it (the per-container warnings only name the basis); empty: none.
  std::string note;
  // Set by a node cap (Ceiling): the most the phase may have in all on the
  // node it was capped to. The amount is at most this; the holders share
  // out only the room their own requests leave under it.
  std::optional<Quantity> most;
};

// The most one phase of a pod may be given of one resource, so that some
// candidate node holds the pod (rules/node_caps_rule.h). A binding floor
// above it is lowered to it; below it, the floor's holders are raised only
// into the room left under it (some of them ask for more than their share).
struct Ceiling {
  std::size_t phase = 0;
  std::string_view resource;  // kCpu, kMemory or kEphemeralStorage
  Quantity amount;
  std::string basis;  // replaces the floor's basis in messages: "train profile, capped to g2-standard-8"
};

// Something a person must hear about a pod.
struct Finding {
  DenialReason reason = DenialReason::kInvalid;
  // Deny at the validating endpoint (audit mode: warn that it would), or
  // only warn.
  bool deny = false;
  std::string message;  // the denial, in full: what is wrong and what to set; empty unless deny
  std::string brief;    // one line for kubectl (under 120 characters): the warning, or the denial in brief
};

// One change to the pod, in Kubernetes terms; the admission layer writes
// it as JSON Patch.
struct SetResource {  // sets a container's request or limit of a resource
  const ContainerFacts* container = nullptr;
  bool limit = false;  // the limit, else the request
  std::string_view resource;
  std::string value;
};
struct SetString {  // sets a string field, adding the maps above it
  std::vector<std::string> path;
  std::string value;
};
struct AddMemoryVolume {  // appends {name, emptyDir: {medium: Memory, sizeLimit}} to a volume list
  std::vector<std::string> list_path;
  std::string name;
  Quantity size_limit;
};
struct MountVolume {  // appends {name, mountPath} to a container's volumeMounts
  const ContainerFacts* container = nullptr;
  std::string name;
  std::string mount_path;
};
using PodEdit = std::variant<SetResource, SetString, AddMemoryVolume, MountVolume>;

// One request (or /dev/shm sizeLimit) a fix raises, for metrics.
struct Raise {
  std::string resource;  // cpu, memory, ephemeral-storage, or shm (/dev/shm sizeLimit)
  Quantity added;        // new value minus the value before
};

// What mutate mode changes in the pod for a rule.
struct Fix {
  std::vector<PodEdit> edits;
  std::vector<std::string> warnings;  // one per change, for kubectl
  // For the gpu-sizer.io/sized annotation: one per container whose
  // requests change, one per rule.
  std::vector<std::string> changes;
  std::vector<Raise> raised;
};

// One line of a rule's arithmetic in `gpu-sizer explain` (the GPU memory
// rule's components): a number, what kind it is and how it was worked out.
struct RulePart {
  std::string name;     // "weights"
  std::string kind;     // "certain", "allowance", "sum", "gpu" or "host"
  int64_t bytes = 0;    // the number, for --output json
  std::string value;    // as the text report shows it: "12.55 GiB/GPU"
  std::string formula;  // "6.74B params x 2 bytes (bf16)"
};

// A rule's row in `gpu-sizer explain`.
struct RuleRow {
  RuleKind rule = RuleKind::kTable;
  std::string floor;                 // what it asks of the pod ("cpu 32, memory 192Gi"), or "-"
  std::string detail;                // why, or why it does not apply
  std::vector<RulePart> parts = {};  // its arithmetic, one line each; most rules have none
};

struct RuleResult {
  std::vector<Floor> floors;
  std::vector<Ceiling> ceilings;
  std::vector<Finding> findings;
  std::optional<Fix> fix;      // only when mutate mode has something to change
  std::optional<RuleRow> row;  // only when explaining
};

// What a rule reads. Floor rules run first; cap rules see the binding
// floors (`binding`); check rules judge the pod as the floors, once capped,
// size it (`sized`, worked out when a rule asks: most checks do not need it).
struct RuleInput {
  const Policy& policy;
  const PodFacts& pod;
  const PodPhases& phases;
  const Profile& profile;
  std::string profile_reason;
  bool explain = false;
  const Candidates* candidates = nullptr;  // the nodes that could run the pod; nullptr: none known
  std::function<const Floor*(std::size_t phase, std::string_view resource)> binding;  // cap rules only
  std::function<PodRequest()> sized;                                                  // check rules only
  const HistorySnapshot* history = nullptr;  // what earlier runs used (sizing/history.h); nullptr: none read
};

class Rule {
 public:
  enum class Stage {
    kFloor,  // sets floors before any container is compared
    kCap,    // lowers binding floors no candidate node can hold
    kCheck,  // judges the sized pod; runs where it can deny (and for explain)
  };

  virtual ~Rule() = default;
  virtual RuleKind kind() const = 0;
  virtual Stage stage() const = 0;
  // REQUIRES: input.phases.gpus > 0; input.binding set when stage() is
  // kCap, input.sized when it is kCheck.
  virtual RuleResult evaluate(const RuleInput& input) const = 0;
  // Its block of the policy file (rule_settings.h); nullptr: it has none.
  virtual const SettingsBlock* settings() const { return nullptr; }
};

// The rules, in the order they run and explain lists them.
std::span<const Rule* const> sizing_rules();

}  // namespace gpusizer
