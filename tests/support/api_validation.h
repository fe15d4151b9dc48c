// The API server's checks of a pod's resources, for tests to hold every
// patched object to: a patch the API server refuses turns a pod that would
// have run into one that cannot be created. Written from kubernetes/
// kubernetes pkg/apis/core/validation/validation.go (ValidateResourceRequirements,
// validatePodResourceRequirements, validatePodResourceConsistency) and
// k8s.io/component-helpers/resource (AggregateContainerRequests):
//
//   - a container's request is at most its limit; an extended resource's
//     (a name with a "/", outside kubernetes.io/) request equals its limit;
//   - pod-level spec.resources names only cpu, memory and hugepages-*, its
//     request at most its limit;
//   - a pod-level request is at least the containers' aggregate request:
//     the app containers and sidecars (init containers with restartPolicy
//     Always) summed, or an init container with the sidecars before it,
//     whichever is larger;
//   - no app container's limit is above the pod-level limit.
//
// Pod specs are found wherever an object holds one (a map with a
// "containers" list), so one call covers a Pod and every workload kind.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpusizer/quantity/quantity.h"

namespace gpusizer::testing {

namespace api_validation_detail {

using nlohmann::json;

inline bool is_quantity(const json& value) { return value.is_string() || value.is_number(); }

inline std::optional<Quantity> quantity(const json& value) {
  if (!is_quantity(value)) return std::nullopt;
  auto parsed = Quantity::parse(value.is_string() ? value.get<std::string>() : value.dump());
  return parsed.ok() ? std::optional<Quantity>(parsed.value()) : std::nullopt;
}

// The list under `key`, or an empty one when it is absent or not a list:
// the fuzzer hands in any JSON, and a check must never throw on it.
inline const json& list_of(const json& object, const char* key) {
  static const json kEmpty = json::array();
  if (!object.is_object()) return kEmpty;
  const auto found = object.find(key);
  return found != object.end() && found->is_array() ? *found : kEmpty;
}

// The string under `key`, or `fallback` when it is absent or not a string.
inline std::string string_of(const json& object, const char* key, const char* fallback) {
  if (!object.is_object()) return fallback;
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : fallback;
}

inline const json& resource_map(const json& container, const char* key) {
  static const json kNone = json::object();
  if (!container.is_object() || !container.contains("resources") || !container["resources"].is_object()) return kNone;
  const json& resources = container["resources"];
  return resources.contains(key) && resources[key].is_object() ? resources[key] : kNone;
}

inline bool is_extended(const std::string& resource) {
  return resource.find('/') != std::string::npos && resource.rfind("kubernetes.io/", 0) != 0;
}

inline void check_container(const json& container, const std::string& where, std::vector<std::string>& errors) {
  const json& requests = resource_map(container, "requests");
  const json& limits = resource_map(container, "limits");
  for (const auto& [resource, value] : requests.items()) {
    if (!limits.contains(resource)) continue;
    const auto request = quantity(value);
    const auto limit = quantity(limits[resource]);
    if (!request || !limit) continue;
    if (is_extended(resource) ? *request != *limit : *limit < *request) {
      errors.push_back(where + ".resources.requests[" + resource + "] " + request->to_string() +
                       (is_extended(resource) ? " must equal" : " must be at most") + " its limit " +
                       limit->to_string());
    }
  }
}

// The containers' aggregate request of `resource` (AggregateContainerRequests).
inline Quantity aggregate_request(const json& spec, const std::string& resource) {
  auto request = [&](const json& container) {
    const json& requests = resource_map(container, "requests");
    auto value = requests.contains(resource) ? quantity(requests[resource]) : std::nullopt;
    if (!value) {
      const json& limits = resource_map(container, "limits");
      value = limits.contains(resource) ? quantity(limits[resource]) : std::nullopt;
    }
    return value.value_or(Quantity());
  };
  Quantity app;
  for (const json& container : list_of(spec, "containers")) app = app.plus(request(container));
  Quantity sidecars;
  Quantity largest_init;
  for (const json& container : list_of(spec, "initContainers")) {
    if (string_of(container, "restartPolicy", "") == "Always") {
      sidecars = sidecars.plus(request(container));
      continue;
    }
    largest_init = std::max(largest_init, sidecars.plus(request(container)));
  }
  return std::max(app.plus(sidecars), largest_init);
}

inline void check_pod_spec(const json& spec, const std::string& where, std::vector<std::string>& errors) {
  for (const char* list : {"containers", "initContainers"}) {
    const json& containers = list_of(spec, list);
    for (std::size_t i = 0; i < containers.size(); ++i) {
      check_container(containers[i], where + "." + list + "[" + std::to_string(i) + "]", errors);
    }
  }
  if (!spec.contains("resources")) return;
  const json& requests = resource_map(spec, "requests");
  const json& limits = resource_map(spec, "limits");
  for (const json* map : {&requests, &limits}) {
    for (const auto& [resource, value] : map->items()) {
      if (resource != "cpu" && resource != "memory" && resource.rfind("hugepages-", 0) != 0) {
        errors.push_back(where + ".resources: " + resource + " is not supported at the pod level");
      }
    }
  }
  check_container(spec, where, errors);
  for (const auto& [resource, value] : requests.items()) {
    const auto pod = quantity(value);
    const Quantity sum = aggregate_request(spec, resource);
    if (pod && *pod < sum) {
      errors.push_back(where + ".resources.requests[" + resource + "] " + pod->to_string() +
                       " must be at least the aggregate container requests of " + sum.to_string());
    }
  }
  // Init containers' limits are not held to it.
  for (const auto& [resource, value] : limits.items()) {
    const auto pod = quantity(value);
    if (!pod) continue;
    for (const json& container : list_of(spec, "containers")) {
      const json& container_limits = resource_map(container, "limits");
      const auto limit = container_limits.contains(resource) ? quantity(container_limits[resource]) : std::nullopt;
      if (limit && *pod < *limit) {
        errors.push_back(where + ".resources.limits[" + resource + "] " + pod->to_string() + " is below container " +
                         string_of(container, "name", "?") + "'s limit " + limit->to_string());
      }
    }
  }
}

inline void find_pod_specs(const json& node, const std::string& where, std::vector<std::string>& errors) {
  if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      find_pod_specs(node[i], where + "[" + std::to_string(i) + "]", errors);
    return;
  }
  if (!node.is_object()) return;
  if (node.contains("containers") && node["containers"].is_array()) check_pod_spec(node, where, errors);
  for (const auto& [key, value] : node.items()) find_pod_specs(value, where.empty() ? key : where + "." + key, errors);
}

}  // namespace api_validation_detail

// What the API server would refuse in the object's pod specs' resources;
// empty when it accepts them all.
inline std::vector<std::string> api_resource_errors(const nlohmann::json& object) {
  std::vector<std::string> errors;
  api_validation_detail::find_pod_specs(object, "", errors);
  return errors;
}

}  // namespace gpusizer::testing
