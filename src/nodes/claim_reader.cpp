#include "gpusizer/nodes/claim_reader.h"

#include <array>
#include <initializer_list>
#include <utility>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

constexpr std::string_view kResourceGroup = "resource.k8s.io";

// NVIDIA's DRA driver (k8s-dra-driver-gpu @2240711): a ComputeDomain names
// the ResourceClaimTemplate its controller makes for the workload's pods
// (api/nvidia.com/resource/v1beta1/computedomain.go, spec.channel), of one
// request for an IMEX channel of this class
// (cmd/compute-domain-controller/computedomain.go).
constexpr std::string_view kComputeDomainGroup = "resource.nvidia.com";
constexpr std::string_view kComputeDomainChannelClass = "compute-domain-default-channel.nvidia.com";

// The value a CEL selector compares one of `attributes` to:
// `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'`
// gives "NVIDIA H100 80GB HBM3". The first comparison found; empty: none.
std::string compared_value(std::string_view expression, std::initializer_list<std::string_view> attributes) {
  for (const std::string_view attribute : attributes) {
    for (std::size_t at = expression.find(attribute); at != std::string_view::npos;
         at = expression.find(attribute, at + 1)) {
      std::size_t i = at + attribute.size();
      // The attribute written as ["productName"] ends with a quote and ']'.
      while (i < expression.size() && (expression[i] == '\'' || expression[i] == '"' || expression[i] == ']')) ++i;
      while (i < expression.size() && expression[i] == ' ') ++i;
      if (expression.substr(i, 2) != "==") continue;
      i += 2;
      while (i < expression.size() && expression[i] == ' ') ++i;
      if (i >= expression.size() || (expression[i] != '\'' && expression[i] != '"')) continue;
      const std::size_t end = expression.find(expression[i], i + 1);
      if (end == std::string_view::npos) continue;
      return std::string(expression.substr(i + 1, end - i - 1));
    }
  }
  return {};
}

// One alternative: `exactly`, a firstAvailable entry, or a v1beta1 request
// (the same fields). `at` is its field path.
Result<DeviceAlternative> read_alternative(JsonView fields, const std::string& at) {
  if (!fields.is_object()) return Status::failure(ProblemCode::kWrongType, at, at + " is not an object");
  DeviceAlternative read;
  read.name = string_member(fields, "name");
  read.device_class = string_member(fields, "deviceClassName");
  const std::string mode = string_member(fields, "allocationMode");
  if (mode == "All") {
    read.all = true;
  } else if (!mode.empty() && mode != "ExactCount") {
    return Status::failure(ProblemCode::kBadValue, at + ".allocationMode",
                           at + ".allocationMode " + in_quotes(mode) + " is not ExactCount or All");
  }
  if (const JsonView count = fields["count"]; !count.is_null() && !read.all) {
    const std::string text = count.is_string() ? std::string(count.string()) : count.text();
    auto whole = read_whole(text, 1, kMaxDevicesPerRequest);
    if (!whole) {
      return Status::failure(ProblemCode::kBadValue, at + ".count",
                             at + ".count " + in_quotes(text) + " " + whole.error());
    }
    read.count = whole.value();
  }
  fields["selectors"].for_each_element([&](JsonView selector) {
    const std::string_view expression = selector["cel"]["expression"].string();
    if (read.model.empty()) read.model = compared_value(expression, {"productName", "model", "profile"});
    read.partition = read.partition || compared_value(expression, {"type"}).find("partition") != std::string::npos;
  });
  return read;
}

Result<ClaimSpec> read_claim_spec(JsonView spec, const std::string& at) {
  ClaimSpec read;
  const JsonView requests = spec["devices"]["requests"];
  const std::string list = at + ".devices.requests";
  if (!requests.is_null() && !requests.is_array()) {
    return Status::failure(ProblemCode::kWrongType, list, list + " is not a list");
  }
  Status status;
  std::size_t index = 0;
  requests.for_each_element([&](JsonView request) {
    if (!status.ok()) return;
    const std::string here = list + "[" + std::to_string(index++) + "]";
    // Admin access reaches devices in use by others (monitoring): it
    // allocates none to the pod.
    if (request["adminAccess"].is_true() || request["exactly"]["adminAccess"].is_true()) return;
    DeviceRequest out{string_member(request, "name"), {}};
    const auto add = [&](JsonView fields, const std::string& field) {
      auto alternative = read_alternative(fields, field);
      if (!alternative) {
        status = alternative.status();
        return;
      }
      out.alternatives.push_back(std::move(alternative).value());
    };
    if (const JsonView exactly = request["exactly"]; !exactly.is_null()) {
      add(exactly, here + ".exactly");
    } else if (const JsonView alternatives = request["firstAvailable"]; !alternatives.is_null()) {
      if (!alternatives.is_array()) {
        status =
            Status::failure(ProblemCode::kWrongType, here + ".firstAvailable", here + ".firstAvailable is not a list");
        return;
      }
      std::size_t n = 0;
      alternatives.for_each_element([&](JsonView each) {
        if (status.ok()) add(each, here + ".firstAvailable[" + std::to_string(n++) + "]");
      });
    } else {
      add(request, here);  // v1beta1: the request's own fields
    }
    if (status.ok()) read.requests.push_back(std::move(out));
  });
  if (!status.ok()) return status;
  return read;
}

// An attribute or capacity of a device by its name, qualified by a domain
// ("gpu.nvidia.com/productName") or not ("productName": the driver's own).
JsonView device_field(JsonView map, std::string_view name) {
  JsonView found;
  map.for_each_member([&](std::string_view key, JsonView value) {
    const auto slash = key.rfind('/');
    if (found.is_absent() && (slash == std::string_view::npos ? key : key.substr(slash + 1)) == name) found = value;
  });
  return found;
}

// A ResourceSlice's spec: its node, driver and devices (v1 and v1beta2
// write a device's attributes and capacity on it, v1beta1 under `basic`).
// A capacity that is not a quantity is left out: it is a fact, not an ask.
DeviceSlice read_slice(JsonView spec) {
  DeviceSlice read{string_member(spec, "nodeName"), string_member(spec, "driver"), {}};
  spec["devices"].for_each_element([&](JsonView device) {
    const JsonView fields = device["basic"].is_object() ? device["basic"] : device;
    const JsonView attributes = fields["attributes"];
    SliceDevice out;
    out.type = string_member(device_field(attributes, "type"), "string");
    for (const std::string_view name : {"productName", "model"}) {
      if (out.product.empty()) out.product = string_member(device_field(attributes, name), "string");
    }
    const JsonView memory = device_field(fields["capacity"], "memory");
    // v1beta1 wrote a capacity as the quantity itself, later versions as {value}.
    const JsonView value = memory.is_object() ? memory["value"] : memory;
    if (auto quantity = Quantity::parse(value.is_string() ? value.string() : value.text());
        quantity && !quantity.value().is_negative()) {
      out.memory_bytes = quantity.value().value_ceil();
    }
    read.devices.push_back(std::move(out));
  });
  return read;
}

// Made by the API server from a template for one pod (its owner).
bool owned_by_pod(JsonView metadata) {
  bool owned = false;
  metadata["ownerReferences"].for_each_element([&](JsonView owner) {
    owned = owned || (owner["kind"].string() == "Pod" && owner["apiVersion"].string() == "v1");
  });
  return owned;
}

}  // namespace

bool is_dra_kind(std::string_view group, std::string_view kind) {
  return (group == kResourceGroup &&
          (kind == to_string(DraKind::kClaimTemplate) || kind == to_string(DraKind::kClaim) ||
           kind == to_string(DraKind::kDeviceClass) || kind == to_string(DraKind::kResourceSlice))) ||
         (group == kComputeDomainGroup && kind == "ComputeDomain");
}

namespace {

// The template a ComputeDomain's controller makes, as it will be: its
// pods' claims on it are then known to hold a channel, not GPUs to size.
// One channel stands for allocationMode All's every channel: either holds
// no GPU. A ComputeDomain of another shape (no channel template named)
// gives none, as an object of another kind does: nothing of it is needed.
std::optional<DraObject> compute_domain_template(JsonView object, std::string namespace_name) {
  DraObject read;
  read.kind = DraKind::kClaimTemplate;
  read.namespace_name = std::move(namespace_name);
  read.name = string_member(object["spec"]["channel"]["resourceClaimTemplate"], "name");
  if (read.name.empty()) return std::nullopt;
  DeviceAlternative alternative;
  alternative.device_class = std::string(kComputeDomainChannelClass);
  read.spec.requests.push_back({"channel", {std::move(alternative)}});
  return read;
}

}  // namespace

Result<std::optional<DraObject>> read_dra_object(JsonView object) {
  const std::string_view api_version = object["apiVersion"].string();
  const std::string_view group = api_version.substr(0, api_version.find('/'));
  const std::string_view kind = object["kind"].string();
  if (!is_dra_kind(group, kind)) return std::optional<DraObject>();
  const JsonView metadata = object["metadata"];
  DraObject read;
  read.name = string_member(metadata, "name");
  if (read.name.empty())
    return Status::failure(ProblemCode::kMissingField, "metadata.name", "metadata.name is missing");
  if (kind == to_string(DraKind::kDeviceClass)) {
    read.kind = DraKind::kDeviceClass;
    read.extended_resource = string_member(object["spec"], "extendedResourceName");
    return std::optional<DraObject>(std::move(read));
  }
  if (kind == to_string(DraKind::kResourceSlice)) {
    read.kind = DraKind::kResourceSlice;
    read.slice = read_slice(object["spec"]);
    if (read.slice.node.empty()) return std::optional<DraObject>();
    return std::optional<DraObject>(std::move(read));
  }
  read.namespace_name = string_member(metadata, "namespace");
  if (read.namespace_name.empty()) read.namespace_name = "default";
  if (group == kComputeDomainGroup) return compute_domain_template(object, std::move(read.namespace_name));
  const bool is_template = kind == to_string(DraKind::kClaimTemplate);
  read.kind = is_template ? DraKind::kClaimTemplate : DraKind::kClaim;
  if (!is_template && owned_by_pod(metadata)) return std::optional<DraObject>();
  auto spec =
      is_template ? read_claim_spec(object["spec"]["spec"], "spec.spec") : read_claim_spec(object["spec"], "spec");
  if (!spec) return spec.status();
  read.spec = std::move(spec).value();
  return std::optional<DraObject>(std::move(read));
}

}  // namespace gpusizer
