#include "gpusizer/sizing/sizing.h"

#include <algorithm>

#include "gpusizer/util/contract.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

Requirement extend_row(const Profile& profile, const TableRow& row, int64_t gpus) {
  GPU_SIZER_REQUIRE(gpus >= row.gpus);
  const int64_t extra = gpus - row.gpus;
  return Requirement{row.cpu.plus(profile.extra_gpu_cpu.times(extra)),
                     row.memory.plus(profile.extra_gpu_memory.times(extra)), profile.storage};
}

std::optional<Requirement> required_resources(const Profile& profile, int64_t gpus) {
  GPU_SIZER_REQUIRE(gpus >= 1);
  if (profile.table.empty()) return std::nullopt;
  const TableRow* base = &profile.table.front();
  for (const TableRow& row : profile.table) {
    if (row.gpus <= gpus) base = &row;
  }
  // Below the first row, the first row.
  return extend_row(profile, *base, std::max(gpus, base->gpus));
}

std::string set_hint(const Profile& profile, int64_t gpus) {
  const auto need = required_resources(profile, gpus);
  return need ? set_hint(profile, gpus, *need) : profile.set_prefix + "_gpu=" + std::to_string(gpus);
}

std::string set_hint(const Profile& profile, int64_t gpus, const Requirement& need) {
  // A profile without a table sizes no CPU: only a rule's memory floor.
  const std::string cpu = need.cpu.is_zero() ? "" : " " + profile.set_prefix + "_cpu=" + need.cpu.to_string();
  return profile.set_prefix + "_gpu=" + std::to_string(gpus) + cpu + " " + profile.set_prefix +
         "_memory=" + need.memory.to_string();
}

std::string osmo_fix(const SelectionInput& selection, const std::string& set_values) {
  return selection.label(kOsmoGroupLabel) ? " (OSMO: --set " + set_values + ")" : "";
}

bool selection_reads(const Policy& policy, ProfileRule::Subject subject, std::string_view key) {
  if (key == kProfileKey) return true;
  return std::any_of(policy.profile_rules.begin(), policy.profile_rules.end(),
                     [&](const ProfileRule& rule) { return rule.subject == subject && rule.key == key; });
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative wildcard match with one backtrack point: linear for the
  // patterns policies use, and no recursion on hostile input.
  std::size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

const std::string* lookup(const std::map<std::string, std::string, std::less<>>& map, std::string_view key) {
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

bool value_matches(const ProfileRule& rule, const std::string& subject) {
  switch (rule.match) {
    case ProfileRule::Match::kIn:
      return std::find(rule.values.begin(), rule.values.end(), subject) != rule.values.end();
    case ProfileRule::Match::kEquals: return subject == rule.value;
    case ProfileRule::Match::kContains: return subject.find(rule.value) != std::string::npos;
    case ProfileRule::Match::kGlob: return glob_match(rule.value, subject);
  }
  return false;
}

// The rule's subject among values a template and the object it is in both
// give (labels, annotations, the name); nullptr when neither has it.
const std::string* own_subject(const ProfileRule& rule, const std::map<std::string, std::string, std::less<>>& labels,
                               const std::map<std::string, std::string, std::less<>>& annotations,
                               const std::string& name) {
  switch (rule.subject) {
    case ProfileRule::Subject::kLabel: return lookup(labels, rule.key);
    case ProfileRule::Subject::kAnnotation: return lookup(annotations, rule.key);
    case ProfileRule::Subject::kName: return name.empty() ? nullptr : &name;
    default: return nullptr;
  }
}

bool inheritable(ProfileRule::Subject subject) {
  return subject == ProfileRule::Subject::kLabel || subject == ProfileRule::Subject::kAnnotation ||
         subject == ProfileRule::Subject::kName;
}

bool rule_matches(const ProfileRule& rule, std::size_t index, const SelectionInput& input) {
  if (inheritable(rule.subject)) {
    if (const std::string* own = own_subject(rule, input.labels, input.annotations, input.name)) {
      return value_matches(rule, *own);
    }
    // The object's verdict, or the template's own empty name.
    if (input.inherited) return input.inherited->matches[index];
    return rule.subject == ProfileRule::Subject::kName && value_matches(rule, input.name);
  }
  switch (rule.subject) {
    case ProfileRule::Subject::kTemplate: return value_matches(rule, input.template_name);
    case ProfileRule::Subject::kReplicaType: return value_matches(rule, input.replica_type);
    case ProfileRule::Subject::kKind: return value_matches(rule, input.kind);
    case ProfileRule::Subject::kOwnerKind: return value_matches(rule, input.owner_kind);
    case ProfileRule::Subject::kCommand:
      return std::any_of(input.commands.begin(), input.commands.end(),
                         [&](const std::string& command) { return value_matches(rule, command); });
    default: return false;
  }
}

}  // namespace

const std::string* SelectionInput::label(std::string_view key) const {
  if (const std::string* own = lookup(labels, key)) return own;
  return inherited ? lookup(inherited->labels, key) : nullptr;
}

const std::string* SelectionInput::annotation(std::string_view key) const {
  if (const std::string* own = lookup(annotations, key)) return own;
  return inherited ? lookup(inherited->annotations, key) : nullptr;
}

std::shared_ptr<const InheritedSelection> inherit_selection(const Policy& policy, InheritedSelection selection) {
  selection.matches.assign(policy.profile_rules.size(), false);
  for (std::size_t i = 0; i < policy.profile_rules.size(); ++i) {
    const ProfileRule& rule = policy.profile_rules[i];
    if (!inheritable(rule.subject)) continue;
    const std::string* subject = own_subject(rule, selection.labels, selection.annotations, selection.name);
    // A name the object lacks is empty, as a template's is.
    if (!subject && rule.subject == ProfileRule::Subject::kName) subject = &selection.name;
    selection.matches[i] = subject && value_matches(rule, *subject);
  }
  return std::make_shared<const InheritedSelection>(std::move(selection));
}

Result<ProfileChoice> select_profile(const Policy& policy, const SelectionInput& input) {
  for (const bool label : {true, false}) {
    const std::string* named = label ? input.label(kProfileKey) : input.annotation(kProfileKey);
    if (!named) continue;
    const std::string origin = label ? "label " : "annotation ";
    const Profile* profile = policy.find_profile(*named);
    if (!profile) {
      return Status::failure(ProblemCode::kUnknownName,
                             std::string(label ? "metadata.labels." : "metadata.annotations.") + kProfileKey,
                             origin + kProfileKey + "=" + printable(*named, kQuotedBytes) +
                                 " names no profile of the policy (known: " + policy.profile_names() + ")");
    }
    return ProfileChoice{profile, origin + kProfileKey + "=" + *named};
  }
  for (std::size_t i = 0; i < policy.profile_rules.size(); ++i) {
    const ProfileRule& rule = policy.profile_rules[i];
    if (rule_matches(rule, i, input)) {
      return ProfileChoice{policy.find_profile(rule.profile), "policy rule: " + rule.text};
    }
  }
  return ProfileChoice{policy.find_profile(policy.default_profile), "defaultProfile"};
}

}  // namespace gpusizer
