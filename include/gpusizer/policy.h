// The sizing policy: which resources are GPUs, the profiles and their tables,
// how a pod's profile is chosen, and what the webhook does (mode). Loaded
// from one YAML file; the embedded default equals the seed tables.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/quantity.h"
#include "gpusizer/result.h"

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
  enum class Subject { kLabel, kAnnotation, kName, kTemplate, kReplicaType };
  enum class Match { kEquals, kContains, kGlob };
  Subject subject = Subject::kLabel;
  std::string key;  // label or annotation key; empty for the other subjects
  Match match = Match::kEquals;
  std::string value;
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

struct Policy {
  Mode mode = Mode::kMutate;
  std::map<std::string, Mode, std::less<>> namespace_modes;
  Exemptions exemptions;
  std::vector<std::string> gpu_resources;
  int64_t deny_from_gpus = 2;
  std::vector<ProfileRule> profile_rules;
  std::string default_profile;
  std::map<std::string, Profile, std::less<>> profiles;

  std::string source;  // the file it came from, or "embedded default"
  std::string sha256;  // of the YAML text, to tell which policy is active

  // The mode for objects in this namespace.
  Mode mode_for(std::string_view ns) const;
  // The exemption of an object in `ns` sent by `user` with `groups`
  // (namespace, then user, then group); nullopt when it is sized.
  std::optional<Exemption> exemption_for(std::string_view ns, std::string_view user = {},
                                         const std::vector<std::string>& groups = {}) const;
  bool is_gpu_resource(std::string_view resource) const;
  // nullptr when there is no such profile.
  const Profile* find_profile(std::string_view name) const;
};

// Parses and validates a policy. On failure the error names the source, the
// field path (profiles.train.table[2].memory) or YAML line, and the problem.
Result<Policy> parse_policy(std::string_view yaml_text, std::string_view source);

// The embedded default policy's YAML text (src/sizing/default_policy.yaml).
const std::string& default_policy_yaml();
// The embedded default, parsed. It is validated by the unit tests.
const Policy& default_policy();

// Hex SHA-256 of text.
std::string sha256_hex(std::string_view text);

}  // namespace gpusizer
