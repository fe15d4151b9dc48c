#include "gpusizer/nodes/node_reader.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

#include "gpusizer/nodes/autoscaler_reader.h"
#include "gpusizer/quantity/quantity.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

std::string node_name(JsonView node) { return string_member(node["metadata"], "name"); }

}  // namespace

Result<Quantity> read_quantity(JsonView value, const std::string& field, bool allow_negative) {
  const std::string text = value.is_string() ? std::string(value.string()) : value.text();
  auto quantity = Quantity::parse(text);
  if (!quantity)
    return Status::failure(ProblemCode::kBadValue, field, field + " " + in_quotes(text) + " is not a quantity");
  if (!allow_negative && quantity.value().is_negative()) {
    return Status::failure(ProblemCode::kBadValue, field, field + " " + in_quotes(text) + " is negative");
  }
  return quantity;
}

std::optional<NodeRequirement> read_node_requirement(JsonView expression, bool field) {
  static constexpr std::pair<std::string_view, NodeRequirement::Op> kOps[] = {
      {"In", NodeRequirement::Op::kIn},         {"NotIn", NodeRequirement::Op::kNotIn},
      {"Exists", NodeRequirement::Op::kExists}, {"DoesNotExist", NodeRequirement::Op::kDoesNotExist},
      {"Gt", NodeRequirement::Op::kGt},         {"Lt", NodeRequirement::Op::kLt}};
  const std::string_view op = expression["operator"].string();
  const auto* found =
      std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& entry) { return entry.first == op; });
  if (found == std::end(kOps)) return std::nullopt;
  NodeRequirement requirement{string_member(expression, "key"), found->second, {}, field};
  expression["values"].for_each_element([&](JsonView value) {
    if (value.is_string()) requirement.values.emplace_back(value.string());
  });
  return requirement;
}

Result<std::vector<Taint>> read_taints(JsonView taints, const std::string& field) {
  if (!taints.is_null() && !taints.is_array()) {
    return Status::failure(ProblemCode::kWrongType, field, field + " is not a list");
  }
  std::vector<Taint> out;
  std::size_t index = 0;
  Status status;
  taints.for_each_element([&](JsonView taint) {
    const std::string at = field + "[" + std::to_string(index++) + "]";
    if (!status.ok()) return;
    const auto effect = taint_effect(taint["effect"].string());
    if (!effect) {
      status = Status::failure(
          ProblemCode::kBadValue, at + ".effect",
          at + ".effect " + in_quotes(taint["effect"].string()) + " is not NoSchedule, PreferNoSchedule or NoExecute");
      return;
    }
    out.push_back({string_member(taint, "key"), string_member(taint, "value"), *effect});
  });
  if (!status.ok()) return status;
  return out;
}

Result<NodeInfo> read_node(JsonView node) {
  if (!node.is_object()) {
    const std::string_view type = node.type_name();
    const bool vowel = type.starts_with('a') || type.starts_with('o');
    return Status::failure(ProblemCode::kWrongType, "",
                           std::string(vowel ? "is an " : "is a ") + std::string(type) + ", not a Node");
  }
  NodeInfo info;
  info.name = node_name(node);
  if (info.name.empty())
    return Status::failure(ProblemCode::kMissingField, "metadata.name", "metadata.name is missing");
  const JsonView labels = node["metadata"]["labels"];
  if (!labels.is_null() && !labels.is_object()) {
    return Status::failure(ProblemCode::kWrongType, "metadata.labels", "metadata.labels is not an object");
  }
  labels.for_each_member([&](std::string_view key, JsonView value) {
    if (value.is_string()) info.labels.emplace_back(key, value.string());
  });
  const JsonView spec = node["spec"];
  info.unschedulable = spec["unschedulable"].is_true();
  auto taints = read_taints(spec["taints"], "spec.taints");
  if (!taints) return taints.status();
  info.taints = std::move(taints).value();
  Status status;
  const JsonView allocatable = node["status"]["allocatable"];
  if (!allocatable.is_null() && !allocatable.is_object()) {
    return Status::failure(ProblemCode::kWrongType, "status.allocatable", "status.allocatable is not an object");
  }
  allocatable.for_each_member([&](std::string_view key, JsonView value) {
    if (!status.ok()) return;
    const bool extended = key.find('/') != std::string_view::npos;
    if (!extended && key != "cpu" && key != "memory" && key != "ephemeral-storage") return;
    // No kubelet reports less than nothing: a negative cpu, memory or
    // storage would make a negative cap. An extended resource that is not a
    // whole count is dropped below (no GPUs), as before.
    auto quantity = read_quantity(value, "status.allocatable." + std::string(key), extended);
    if (!quantity) {
      status = quantity.status();
      return;
    }
    if (key == "cpu") {
      info.cpu = quantity.value();
    } else if (key == "memory") {
      info.memory = quantity.value();
    } else if (key == "ephemeral-storage") {
      info.ephemeral_storage = quantity.value();
    } else if (quantity.value().is_whole() && !quantity.value().is_negative()) {
      info.extended.emplace_back(key, quantity.value().value_ceil());
    }
  });
  if (!status.ok()) return status;
  return info;
}

Status add_nodes(JsonView document, const std::string& where, InventoryBuilder& builder) {
  const std::string_view kind = document["kind"].string();
  // Read beside the nodes (claim_reader.h, autoscaler_reader.h).
  if (kind == "ResourceSlice" || !autoscaler_kind(document).empty()) return {};
  if (kind == "Node") {
    auto node = read_node(document);
    if (!node) return with_context(where + ": node " + node_name(document) + ": ", node.problem());
    builder.upsert(std::move(node).value());
    return {};
  }
  if (kind != "List" && kind != "NodeList") {
    return Status::failure(
        ProblemCode::kBadValue, "kind",
        where + ": kind " + in_quotes(kind) +
            " is not a Node, a List of Nodes, a NodePool, an EC2NodeClass, an AKSNodeClass or a ComputeClass");
  }
  const JsonView items = document["items"];
  if (!items.is_array()) return Status::failure(ProblemCode::kWrongType, "items", where + ": items is not a list");
  std::size_t index = 0;
  Status status;
  items.for_each_element([&](JsonView item) {
    const std::string at = where + ": items[" + std::to_string(index++) + "]";
    if (!status.ok()) return;
    const std::string_view item_kind = item["kind"].string();
    // A NodeList's items carry no kind; a List's say what they are.
    if (kind == "List" && (item_kind == "ResourceSlice" || !autoscaler_kind(item).empty())) return;
    if (kind == "List" && item_kind != "Node") {
      status = Status::failure(ProblemCode::kBadValue, "items[" + std::to_string(index - 1) + "].kind",
                               at + ": kind " + in_quotes(item_kind) + " is not a Node");
      return;
    }
    auto node = read_node(item);
    if (!node) {
      status = with_context(at + " (node " + node_name(item) + "): ", node.problem());
      return;
    }
    builder.upsert(std::move(node).value());
  });
  return status;
}

}  // namespace gpusizer
