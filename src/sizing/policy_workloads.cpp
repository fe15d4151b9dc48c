// The policy's `workloads:` list: kinds beyond the built-in table and
// where their pods, or their components' GPU, CPU and memory fields, are
// (docs/policy.md).
#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "gpusizer/sizing/policy_fields.h"

namespace gpusizer::policy_fields {

namespace {

// A dotted field path below a component (`workloads[i].fields[n].gpu`).
std::string read_field_path(const YAML::Node& node, const std::string& path) {
  std::string field = read_string(node, path);
  const std::string problem = field_path_problem(field);
  if (!problem.empty()) fail(ProblemCode::kBadValue, path, node, "\"" + field + "\" " + problem);
  return field;
}

// `cpu:` or `memory:` of a component: one field (its request and limit),
// or {request, limit} (limit optional).
void read_resource_fields(const YAML::Node& node, const std::string& path, std::string& request, std::string& limit) {
  if (node.IsScalar()) {
    request = limit = read_field_path(node, path);
    return;
  }
  const Block block(node, path, false, {"request", "limit"});
  if (!node["request"])
    fail(ProblemCode::kMissingField, path, node, "missing field request (the field its operator reads as the request)");
  block.read("request", [&](const auto& value, const auto& at) { request = read_field_path(value, at); });
  block.read("limit", [&](const auto& value, const auto& at) { limit = read_field_path(value, at); });
}

// One `fields:` entry of `workloads:`: a component and where it writes its
// GPU count, CPU and memory.
TemplateLocation read_component_location(const YAML::Node& node, const std::string& path) {
  const Block block(node, path, false, {"at", "gpu", "gpuFormat", "gpuResource", "cpu", "memory", "scheduling"});
  for (const char* key : {"at", "gpu"}) {
    if (!node[key]) fail(ProblemCode::kMissingField, path, node, std::string("missing field ") + key);
  }
  TemplateLocation location{"", PodShape::kFields};
  ComponentFields& fields = location.fields;
  block.read("at", [&](const auto& value, const auto& at) {
    location.pattern = read_string(value, at);
    const std::string problem = location_problem(location.pattern);
    if (!problem.empty())
      fail(ProblemCode::kBadValue, at, value, "\"" + location.pattern + "\" cannot hold a component: it " + problem);
  });
  block.read("gpu", [&](const auto& value, const auto& at) { fields.gpu = read_field_path(value, at); });
  block.read("gpuFormat", [&](const auto& value, const auto& at) {
    static constexpr std::pair<std::string_view, GpuCountFormat> kFormats[] = {
        {"count", GpuCountFormat::kCount},
        {"profile:count", GpuCountFormat::kProfileCount},
        {"instanceType", GpuCountFormat::kInstanceType}};
    const std::string format = read_string(value, at);
    const auto* found = std::find_if(std::begin(kFormats), std::end(kFormats),
                                     [&](const auto& entry) { return entry.first == format; });
    if (found == std::end(kFormats))
      fail(ProblemCode::kBadValue, at, value, "must be count, profile:count or instanceType, found \"" + format + "\"");
    fields.format = found->second;
  });
  block.read("gpuResource",
             [&](const auto& value, const auto& at) { fields.gpu_resource = read_field_path(value, at); });
  block.read("cpu", [&](const auto& value, const auto& at) {
    read_resource_fields(value, at, fields.cpu_request, fields.cpu_limit);
  });
  block.read("memory", [&](const auto& value, const auto& at) {
    read_resource_fields(value, at, fields.memory_request, fields.memory_limit);
  });
  block.read("scheduling", [&](const auto& value, const auto& at) { fields.scheduling = read_field_path(value, at); });
  return location;
}

}  // namespace

// `workloads:`, a list that replaces the base's.
std::vector<WorkloadKind> read_workloads(const YAML::Node& node) {
  if (!node.IsSequence())
    fail(ProblemCode::kWrongType, "workloads", node,
         "must be a list of {group, kind, templates, podSpecs, containers, fields}");
  std::vector<WorkloadKind> kinds;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node& entry = node[i];
    const std::string path = "workloads[" + std::to_string(i) + "]";
    require_map(entry, path);
    check_keys(entry, path, {"group", "kind", "templates", "podSpecs", "containers", "fields"});
    WorkloadKind kind;
    // The core group is written "" (or left out), as in apiVersion: v1.
    if (entry["group"]) kind.group = entry["group"].IsNull() ? "" : read_string(entry["group"], path + ".group");
    if (!entry["kind"]) fail(ProblemCode::kMissingField, path, entry, "missing field kind");
    kind.kind = read_string(entry["kind"], path + ".kind");
    if (kind.kind.empty())
      fail(ProblemCode::kBadValue, path + ".kind", entry["kind"], "must name the kind, e.g. MyTrainingJob");
    for (const auto& [key, shape] : {std::pair{"templates", PodShape::kPod}, std::pair{"podSpecs", PodShape::kPodSpec},
                                     std::pair{"containers", PodShape::kContainer}}) {
      if (!entry[key]) continue;
      const std::string list_path = path + "." + key;
      const std::vector<std::string> patterns = read_string_list(entry[key], list_path);
      for (std::size_t n = 0; n < patterns.size(); ++n) {
        const std::string problem = location_problem(patterns[n]);
        if (!problem.empty()) {
          fail(ProblemCode::kBadValue, list_path + "[" + std::to_string(n) + "]", entry[key][n],
               "\"" + patterns[n] + "\" cannot hold a pod template: it " + problem);
        }
        kind.locations.push_back({patterns[n], shape});
      }
    }
    if (const YAML::Node& components = entry["fields"]) {
      if (!components.IsSequence())
        fail(ProblemCode::kWrongType, path + ".fields", components, "must be a list of {at, gpu, cpu, memory, ...}");
      for (std::size_t n = 0; n < components.size(); ++n) {
        kind.locations.push_back(read_component_location(components[n], path + ".fields[" + std::to_string(n) + "]"));
      }
    }
    if (kind.locations.empty()) {
      fail(ProblemCode::kBadValue, path, entry,
           "names no place for pods: give templates (pod templates, {metadata, spec: {containers}}), "
           "podSpecs ({containers}), containers ({image, resources}) or fields (a component's GPU, CPU and "
           "memory fields)");
    }
    const bool repeated = std::any_of(kinds.begin(), kinds.end(), [&](const WorkloadKind& other) {
      return other.group == kind.group && other.kind == kind.kind;
    });
    if (repeated)
      fail(ProblemCode::kDuplicateField, path, entry,
           "names " + kind.kind + " (group \"" + kind.group + "\") a second time");
    kinds.push_back(std::move(kind));
  }
  return kinds;
}

}  // namespace gpusizer::policy_fields
