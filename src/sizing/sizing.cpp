#include "gpusizer/sizing/sizing.h"

#include <algorithm>

#include "gpusizer/util/strings.h"

namespace gpusizer {

Requirement extend_row(const Profile& profile, const TableRow& row, int64_t gpus) {
  const int64_t extra = gpus - row.gpus;
  return Requirement{row.cpu.plus(profile.extra_gpu_cpu.times(extra)),
                     row.memory.plus(profile.extra_gpu_memory.times(extra)), profile.storage};
}

std::optional<Requirement> required_resources(const Profile& profile, int64_t gpus) {
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

bool rule_matches(const ProfileRule& rule, const SelectionInput& input) {
  const std::string* subject = nullptr;
  switch (rule.subject) {
    case ProfileRule::Subject::kLabel: subject = lookup(input.labels, rule.key); break;
    case ProfileRule::Subject::kAnnotation: subject = lookup(input.annotations, rule.key); break;
    case ProfileRule::Subject::kName: subject = &input.name; break;
    case ProfileRule::Subject::kTemplate: subject = &input.template_name; break;
    case ProfileRule::Subject::kReplicaType: subject = &input.replica_type; break;
    case ProfileRule::Subject::kKind: subject = &input.kind; break;
    case ProfileRule::Subject::kOwnerKind: subject = &input.owner_kind; break;
  }
  if (!subject) return false;
  switch (rule.match) {
    case ProfileRule::Match::kIn:
      return std::find(rule.values.begin(), rule.values.end(), *subject) != rule.values.end();
    case ProfileRule::Match::kEquals: return *subject == rule.value;
    case ProfileRule::Match::kContains: return subject->find(rule.value) != std::string::npos;
    case ProfileRule::Match::kGlob: return glob_match(rule.value, *subject);
  }
  return false;
}

}  // namespace

Result<ProfileChoice> select_profile(const Policy& policy, const SelectionInput& input) {
  for (const auto* where : {&input.labels, &input.annotations}) {
    const std::string* named = lookup(*where, kProfileKey);
    if (!named) continue;
    const std::string origin = where == &input.labels ? "label " : "annotation ";
    const Profile* profile = policy.find_profile(*named);
    if (!profile) {
      std::string known;
      for (const auto& [name, p] : policy.profiles) known += (known.empty() ? "" : ", ") + name;
      return Status::invalid_argument(origin + kProfileKey + "=" + printable(*named, kQuotedBytes) +
                                      " names no profile of the policy (known: " + known + ")");
    }
    return ProfileChoice{profile, origin + kProfileKey + "=" + *named};
  }
  for (std::size_t i = 0; i < policy.profile_rules.size(); ++i) {
    const ProfileRule& rule = policy.profile_rules[i];
    if (rule_matches(rule, input)) {
      return ProfileChoice{policy.find_profile(rule.profile), "policy rule: " + rule.text};
    }
  }
  return ProfileChoice{policy.find_profile(policy.default_profile), "defaultProfile"};
}

}  // namespace gpusizer
