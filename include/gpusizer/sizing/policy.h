// The sizing policy: which resources are GPUs, the profiles and their tables,
// how a pod's profile is chosen, and what the webhook does (mode). Loaded
// from one YAML file; the embedded default equals the seed tables.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/accelerators.h"
#include "gpusizer/sizing/rule_settings.h"
#include "gpusizer/sizing/workload_kinds.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

enum class Mode {
  kMutate,   // raise undersized values; deny what no patch can fix
  kEnforce,  // never patch; deny undersized memory
  kAudit,    // never patch or deny; warn and count only
};
std::string_view to_string(Mode mode);

// One exact row of a profile table: a pod with `gpus` GPUs needs this much.
struct TableRow {
  int64_t gpus = 0;
  Quantity cpu;
  Quantity memory;
};

struct Profile {
  std::string name;
  // Prefix of the OSMO workflow values in hints: "train" -> train_gpu=...
  std::string set_prefix;
  // Ascending by gpus. Empty: the profile sizes no CPU or memory.
  std::vector<TableRow> table;
  // Added per GPU above the nearest row below (between rows and past the last).
  Quantity extra_gpu_cpu;
  Quantity extra_gpu_memory;
  // Ephemeral storage per pod; does not scale with GPUs.
  std::optional<Quantity> storage;
  // More GPUs than this is denied (single-GPU stages).
  std::optional<int64_t> max_gpus;
};

// A profile selection rule: when the subject matches, the profile applies.
struct ProfileRule {
  // kKind: the reviewed object's kind (Deployment, PyTorchJob, Pod);
  // kOwnerKind: a Pod's controller (ownerReferences, controller: true);
  // kCommand: a GPU container's command and args, joined by spaces (the
  // rule holds when one container's does).
  enum class Subject { kLabel, kAnnotation, kName, kTemplate, kReplicaType, kKind, kOwnerKind, kCommand };
  enum class Match { kEquals, kContains, kGlob, kIn };
  Subject subject = Subject::kLabel;
  std::string key;  // label or annotation key; empty for the other subjects
  Match match = Match::kEquals;
  std::string value;                // kEquals, kContains, kGlob
  std::vector<std::string> values;  // kIn
  std::string profile;
  std::string text;  // as a person reads it: label osmo.group_name equals "finetune-job"
};

// Who may skip sizing (policy `exemptions`): objects in these namespaces,
// or sent to the API server by these users or members of these groups
// (the review's userInfo), are admitted unchanged.
struct Exemptions {
  std::vector<std::string> namespaces;
  std::vector<std::string> users;
  std::vector<std::string> groups;
};

// Why one review skips sizing: reason "namespace", "user" or "group", and
// the name that matched.
struct Exemption {
  std::string reason;
  std::string name;
};

// What a check that no patch can fix does when it fails: warn and admit, or
// deny (at the validating endpoint; audit mode only warns).
enum class CheckAction { kWarn, kDeny };

// Decimal coefficients (safety margin, overhead factor, adapter share) are held in
// thousandths so every computation stays in exact integers: 0.85 -> 850.
using Milli = int64_t;

// Long-lived controllers (Deployment, StatefulSet, serving CRDs): GitOps
// tools (Argo CD, Flux) compare their templates with git, so a patched
// template is drift they report or revert. Unless patchTemplates, their
// templates are only warned about (denied in enforce mode) and their Pods
// are sized when created, as the Vertical Pod Autoscaler does.
struct LongLivedPolicy {
  std::vector<std::string> kinds;
  bool patch_templates = false;
};

struct Policy {
  Mode mode = Mode::kMutate;
  std::map<std::string, Mode, std::less<>> namespace_modes;
  Exemptions exemptions;
  std::vector<std::string> gpu_resources;
  // The other ways a pod asks for accelerators (sizing/accelerators.h), as
  // the policy's `accelerators` list gives them before the default's: by
  // resource, and by pod annotation.
  std::vector<AcceleratorClass> accelerators;
  std::vector<AcceleratorClass> accelerator_annotations;
  std::vector<AcceleratorClass> accelerator_device_classes;  // DRA DeviceClasses
  int64_t deny_from_gpus = 2;
  std::vector<ProfileRule> profile_rules;
  std::string default_profile;
  std::map<std::string, Profile, std::less<>> profiles;
  LongLivedPolicy long_lived;
  // Kinds the cluster adds, or corrects, beyond the built-in table
  // (workloads/workloads.h); looked up before it.
  std::vector<WorkloadKind> workloads;
  // Each rule's block (sharedMemory, dataLoader, nodeCaps, gpuMemory,
  // nodeFit): rule_settings.get<NodeFitPolicy>().
  RuleSettings rule_settings;

  std::string source;  // the file it came from, or "embedded default"
  std::string sha256;  // of the YAML text, to tell which policy is active

  // The mode for objects in this namespace.
  Mode mode_for(std::string_view ns) const;
  // The exemption of an object in `ns` sent by `user` with `groups`
  // (namespace, then user, then group); nullopt when it is sized.
  std::optional<Exemption> exemption_for(std::string_view ns, std::string_view user = {},
                                         const std::vector<std::string>& groups = {}) const;
  // Whether the tables count the resource as GPUs: gpuResources, and
  // accelerators with sizing gpus.
  bool is_gpu_resource(std::string_view resource) const;
  // The accelerator class of an extended resource: a gpuResources entry
  // (a whole GPU, counted), the first accelerators entry that matches, or
  // unknown_accelerator_class; nullptr: not an accelerator.
  const AcceleratorClass* accelerator_for(std::string_view resource) const;
  // The accelerator class of a DRA device class: the first accelerators
  // entry by deviceClass that matches, or unknown_device_class; nullptr:
  // not an accelerator (a NIC's class).
  const AcceleratorClass* device_class_for(std::string_view device_class) const;
  // nullptr when there is no such profile.
  const Profile* find_profile(std::string_view name) const;
  // The profiles' names, sorted, for a message naming an unknown one:
  // "augment, infer, render, train".
  std::string profile_names() const;
};

// Parses and validates a policy. On failure the error names the source, the
// field path (profiles.train.table[2].memory) or YAML line, and the problem.
Result<Policy> parse_policy(std::string_view yaml_text, std::string_view source);

// The embedded default policy's YAML text (src/sizing/default_policy.yaml).
const std::string& default_policy_yaml();
// The embedded default, parsed. It is validated by the unit tests.
const Policy& default_policy();

}  // namespace gpusizer
