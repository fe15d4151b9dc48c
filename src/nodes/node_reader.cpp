#include "gpusizer/nodes/node_reader.h"

#include <optional>
#include <utility>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

// A quantity as written (a string, or a bare number); a negative one fails
// unless allow_negative.
Result<Quantity> quantity_of(JsonView value, const std::string& field, bool allow_negative) {
  const std::string text = value.is_string() ? std::string(value.string()) : value.text();
  auto quantity = Quantity::parse(text);
  if (!quantity)
    return Status::failure(ProblemCode::kBadValue, field, field + " " + in_quotes(text) + " is not a quantity");
  if (!allow_negative && quantity.value().is_negative()) {
    return Status::failure(ProblemCode::kBadValue, field, field + " " + in_quotes(text) + " is negative");
  }
  return quantity;
}

std::string node_name(JsonView node) { return string_member(node["metadata"], "name"); }

}  // namespace

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
  const JsonView taints = spec["taints"];
  if (!taints.is_null() && !taints.is_array()) {
    return Status::failure(ProblemCode::kWrongType, "spec.taints", "spec.taints is not a list");
  }
  std::size_t index = 0;
  Status status;
  taints.for_each_element([&](JsonView taint) {
    const std::string at = "spec.taints[" + std::to_string(index++) + "]";
    if (!status.ok()) return;
    const auto effect = taint_effect(taint["effect"].string());
    if (!effect) {
      status = Status::failure(
          ProblemCode::kBadValue, at + ".effect",
          at + ".effect " + in_quotes(taint["effect"].string()) + " is not NoSchedule, PreferNoSchedule or NoExecute");
      return;
    }
    info.taints.push_back({string_member(taint, "key"), string_member(taint, "value"), *effect});
  });
  if (!status.ok()) return status;
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
    auto quantity = quantity_of(value, "status.allocatable." + std::string(key), extended);
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
  if (kind == "ResourceSlice") return {};
  if (kind == "Node") {
    auto node = read_node(document);
    if (!node) return with_context(where + ": node " + node_name(document) + ": ", node.problem());
    builder.upsert(std::move(node).value());
    return {};
  }
  if (kind != "List" && kind != "NodeList") {
    return Status::failure(
        ProblemCode::kBadValue, "kind",
        where + ": kind " + in_quotes(kind) + " is not a Node or a List of Nodes (kubectl get nodes -o yaml)");
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
    if (kind == "List" && item_kind == "ResourceSlice") return;
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
