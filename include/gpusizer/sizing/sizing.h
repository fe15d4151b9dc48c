// The sizing engine: pure functions from a policy and a GPU count to what a
// pod needs. No I/O and no JSON: plain structs in, plain structs out.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

// What a whole pod with a given GPU count needs.
struct Requirement {
  Quantity cpu;
  Quantity memory;
  std::optional<Quantity> storage;  // ephemeral-storage; absent when the profile sets none
};

// What `gpus` GPUs need from a row: its cpu and memory plus the profile's
// perExtraGpu for each GPU past it, and the profile's storage.
// REQUIRES: gpus >= row.gpus.
Requirement extend_row(const Profile& profile, const TableRow& row, int64_t gpus);

// The profile's exact row when one matches; otherwise the nearest row below
// plus perExtraGpu for each GPU above it (3 GPUs train: 24 CPU / 144Gi; 16
// GPUs train: 128 CPU / 768Gi). Below the first row, the first row.
// Returns nullopt when the profile has no table (it sizes nothing).
// REQUIRES: gpus >= 1.
std::optional<Requirement> required_resources(const Profile& profile, int64_t gpus);

// The OSMO submit values for this GPU count, e.g.
// "train_gpu=4 train_cpu=32 train_memory=192Gi"; for a profile without a
// table only the GPU value ("render_gpu=1").
std::string set_hint(const Profile& profile, int64_t gpus);
// The same with the values a rule beyond the table set (a larger memory floor).
std::string set_hint(const Profile& profile, int64_t gpus, const Requirement& need);

// What a pod template takes from the object around it: the object's labels
// and annotations (those the policy reads) and its name, read once for all
// of the object's templates, with each profile rule's verdict on them (a
// workflow of thousands of templates must not match its rules against the
// same values thousands of times). Made by inherit_selection().
struct InheritedSelection {
  std::map<std::string, std::string, std::less<>> labels;
  std::map<std::string, std::string, std::less<>> annotations;
  std::string name;  // metadata.name, or generateName when the name is empty
  // Per policy profile rule on a label, an annotation or the name: whether
  // it matches these (false when the label or annotation is absent).
  std::vector<bool> matches;
};

// What profile selection looks at on a pod (or pod template).
struct SelectionInput {
  std::map<std::string, std::string, std::less<>> labels;
  std::map<std::string, std::string, std::less<>> annotations;
  std::string name;           // metadata.name, or generateName when the name is empty
  std::string template_name;  // Argo template name
  std::string replica_type;   // PyTorchJob replica type, JobSet job, Ray group, Volcano task
  std::string kind;           // the reviewed object's kind: Pod, Deployment, PyTorchJob
  std::string owner_kind;     // a Pod's controller's kind (ReplicaSet, Job); empty for templates
  // Each GPU container's command and args, joined by spaces
  // ("python3 -m sglang.launch_server --tp 8"); read only for a policy
  // with a command rule (selection_reads).
  std::vector<std::string> commands;
  // The object's, for the labels and annotations the template lacks and
  // its name when it has none; nullptr for a Pod.
  std::shared_ptr<const InheritedSelection> inherited;

  // The template's label (or annotation), else the object's; nullptr when neither has it.
  const std::string* label(std::string_view key) const;
  const std::string* annotation(std::string_view key) const;
};

// OSMO gives each pod it creates for a task the label osmo.group_name (and
// `gpu-sizer check` gives it to an OSMO spec's tasks). Its users size a
// task with `osmo workflow submit --set`, so a fix said to them ends with
// those values: " (OSMO: --set train_gpu=4 ...)"; to anyone else it says
// nothing, as the values would only be noise beside the fields to set.
inline constexpr const char* kOsmoGroupLabel = "osmo.group_name";
std::string osmo_fix(const SelectionInput& selection, const std::string& set_values);

// The object's part of its templates' selection, each rule matched once.
// REQUIRES: the policy is the one select_profile will be called with.
std::shared_ptr<const InheritedSelection> inherit_selection(const Policy& policy, InheritedSelection selection);

// The label gpu-sizer.io/profile, then the annotation of the same key, then
// the first matching policy rule, then the policy's defaultProfile.
inline constexpr const char* kProfileKey = "gpu-sizer.io/profile";

struct ProfileChoice {
  const Profile* profile = nullptr;  // points into the policy
  std::string reason;                // why, as a person reads it
};

// Fails when the label or annotation names a profile the policy lacks.
Result<ProfileChoice> select_profile(const Policy& policy, const SelectionInput& input);

// Whether select_profile reads the label (subject kLabel) or the annotation
// (kAnnotation) named key: kProfileKey or a rule's key. A SelectionInput
// needs no other labels or annotations. With kCommand and no key: whether
// a rule reads the GPU containers' commands.
bool selection_reads(const Policy& policy, ProfileRule::Subject subject, std::string_view key);

// `*` matches any run of characters, everything else itself.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace gpusizer
