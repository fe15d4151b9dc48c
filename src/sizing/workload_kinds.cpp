#include "gpusizer/sizing/workload_kinds.h"

#include <algorithm>
#include <cctype>
#include <iterator>

namespace gpusizer {

namespace {

// Fields of a pod or container that hold no pod template below them.
constexpr std::string_view kPodLeafFields[] = {"metadata",   "status",         "labels",    "annotations",
                                               "containers", "initContainers", "resources", "env",
                                               "volumes",    "volumeMounts",   "command",   "args"};

}  // namespace

std::vector<std::string_view> location_parts(std::string_view pattern) {
  std::vector<std::string_view> parts;
  while (!pattern.empty()) {
    const auto dot = pattern.find('.');
    parts.push_back(pattern.substr(0, dot));
    pattern = dot == std::string_view::npos ? std::string_view() : pattern.substr(dot + 1);
  }
  return parts;
}

std::string location_problem(std::string_view pattern) {
  if (pattern.empty()) return "is empty; write the keys from the object root, e.g. spec.template";
  if (pattern.front() == '.' || pattern.back() == '.') return "has an empty key at an end: drop the dot";
  const std::vector<std::string_view> parts = location_parts(pattern);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    const std::string_view key = part.ends_with("[]") ? part.substr(0, part.size() - 2) : part;
    const bool word = !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '_' || c == '-';
    });
    if (part != "*" && !word) {
      return "has \"" + std::string(part) + "\": each key is a field name, name[] (every element of a list) or * " +
             "(every value of a map), separated by dots";
    }
    if (std::find(std::begin(kPodLeafFields), std::end(kPodLeafFields), key) != std::end(kPodLeafFields)) {
      return "passes through \"" + std::string(key) +
             "\", a field of a pod or container that holds no pod template; name the template itself (the object " +
             "with metadata and spec.containers), e.g. spec.template";
    }
  }
  return "";
}

std::string field_path_problem(std::string_view path) {
  if (path.empty()) return "is empty; write the keys below the component, e.g. resources.limits.gpu";
  if (path.front() == '.' || path.back() == '.') return "has an empty key at an end: drop the dot";
  for (const std::string_view key : location_parts(path)) {
    const bool word = !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '_' || c == '-' || c == '/';
    });
    if (!word) return "has \"" + std::string(key) + "\": each key is a field name, separated by dots (no [] nor *)";
  }
  return "";
}

const std::string& ComponentFields::field_for(std::string_view resource, bool limit) const {
  static const std::string kNone;
  if (resource == "cpu") return limit ? cpu_limit : cpu_request;
  if (resource == "memory") return limit ? memory_limit : memory_request;
  return kNone;
}

std::string_view role_name(KindRole role) {
  switch (role) {
    case KindRole::kServing: return "serving";
    case KindRole::kTraining: return "training";
    case KindRole::kNone: break;
  }
  return "none";
}

}  // namespace gpusizer
