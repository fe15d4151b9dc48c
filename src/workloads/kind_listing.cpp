// `gpu-sizer kinds`: the built-in kind table as data, which the webhook
// registrations in deploy/ and the chart are generated from
// (cmd/generate/generate.py) and the e2e scripts read.
#include <nlohmann/json.hpp>

#include "gpusizer/workloads/workloads.h"

namespace gpusizer {

namespace {

std::string_view shape_name(PodShape shape) {
  switch (shape) {
    case PodShape::kArgoTemplate: return "argoTemplate";
    case PodShape::kPodSpec: return "podSpec";
    case PodShape::kContainer: return "container";
    case PodShape::kFields: return "fields";
    case PodShape::kPod: break;
  }
  return "template";
}

nlohmann::ordered_json kind_rows() {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const WorkloadKind& row : builtin_workload_kinds()) {
    nlohmann::ordered_json locations = nlohmann::ordered_json::array();
    for (const TemplateLocation& location : row.locations) {
      nlohmann::ordered_json entry = {{"pattern", location.pattern}, {"shape", shape_name(location.shape)}};
      if (location.shape == PodShape::kFields) entry["gpu"] = location.fields.gpu;
      locations.push_back(std::move(entry));
    }
    rows.push_back({{"group", row.group},
                    {"kind", row.kind},
                    {"resource", row.resource},
                    {"versions", row.versions},
                    {"family", row.family},
                    {"role", role_name(row.role)},
                    {"longLived", row.long_lived},
                    {"locations", std::move(locations)}});
  }
  return rows;
}

}  // namespace

std::string kind_table_json() { return kind_rows().dump(2) + "\n"; }

// The same rows in block YAML; each scalar is written as JSON, which YAML
// reads as the same string or boolean.
std::string kind_table_yaml() {
  std::string out;
  for (const auto& row : kind_rows()) {
    const char* lead = "- ";
    for (const auto& [key, value] : row.items()) {
      out += lead + key + ":";
      lead = "  ";
      if (!value.is_array()) {
        out += " " + value.dump() + "\n";
        continue;
      }
      out += "\n";
      for (const auto& location : value) out += "    - " + location.dump() + "\n";
    }
  }
  return out;
}

}  // namespace gpusizer
