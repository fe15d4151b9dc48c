#include "gpusizer/admission/component_fields.h"

#include <optional>

#include "gpusizer/util/contract.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// The count after the last ':' of "<profile>:<count>", or an error naming
// the form.
Result<int64_t> profile_count(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon != std::string_view::npos && colon > 0) {
    if (auto count = read_whole(text.substr(colon + 1), 0)) return count;
  }
  return Status::failure(ProblemCode::kBadValue, "",
                         "must be <profile>:<count> with a whole count of GPUs, found " + in_quotes(text));
}

// The device a "<profile>:<count>" asks for, by the profile's name: KubeAI's
// profiles are its admin's, and its chart's are named for their device
// (substratusai/kubeai charts/kubeai/values.yaml and values-gke.yaml: cpu,
// nvidia-gpu-l4 with nvidia.com/gpu, amd-gpu-mi300x with amd.com/gpu,
// google-tpu-v5e-1x1 with google.com/tpu). Nullopt: the CPU profile, which
// asks for none; a name that says nothing is taken for `gpu_resource`.
std::optional<std::string_view> profile_resource(std::string_view text, std::string_view gpu_resource) {
  const std::string_view profile = text.substr(0, text.rfind(':'));
  if (profile == "cpu" || profile.starts_with("cpu-")) return std::nullopt;
  if (profile.starts_with("nvidia-")) return "nvidia.com/gpu";
  if (profile.starts_with("amd-")) return "amd.com/gpu";
  if (profile.starts_with("google-tpu")) return "google.com/tpu";
  return gpu_resource;
}

// The GPU's resource: the gpuResource field's value, else the policy's
// first GPU resource (parse_policy refuses an empty gpuResources).
std::string_view gpu_resource_of(const Policy& policy, JsonView component, const ComponentFields& fields) {
  if (!fields.gpu_resource.empty()) {
    const std::string_view named = at_field(component, fields.gpu_resource).string();
    if (!named.empty()) return named;
  }
  GPU_SIZER_REQUIRE(!policy.gpu_resources.empty());
  return policy.gpu_resources.front();
}

}  // namespace

JsonView at_field(JsonView object, std::string_view path) {
  for (const std::string_view key : location_parts(path)) object = object[key];
  return object;
}

ResourcesRead read_component(const Policy& policy, JsonView component, const ComponentFields& fields,
                             const std::function<std::string()>& where) {
  ResourcesRead read;
  const auto read_field = [&](std::string_view resource, const std::string& path, Quantities& out) {
    const JsonView value = path.empty() ? JsonView() : at_field(component, path);
    if (value.is_null()) return;
    // Problems name the component, then the field's path below it.
    read_resource_quantity(policy, resource, value, where, path, out, read);
  };
  for (const std::string_view resource : {kCpu, kMemory}) {
    read_field(resource, fields.field_for(resource, false), read.requests);
    read_field(resource, fields.field_for(resource, true), read.limits);
  }
  const std::string_view gpu_resource = gpu_resource_of(policy, component, fields);
  switch (fields.format) {
    case GpuCountFormat::kCount: read_field(gpu_resource, fields.gpu, read.limits); break;
    case GpuCountFormat::kProfileCount: {
      const JsonView value = at_field(component, fields.gpu);
      if (value.is_null()) break;
      const auto count = profile_count(value.string());
      if (!count) {
        read.problems.push_back({ProblemCode::kBadValue, where() + "." + fields.gpu, count.error(), true});
      } else if (const auto resource = profile_resource(value.string(), gpu_resource)) {
        read.limits.add(*resource, Quantity::from_bytes(count.value()));
      }
      break;
    }
    case GpuCountFormat::kInstanceType: break;
  }
  return read;
}

std::string asked_gpus_text(JsonView component, const ComponentFields& fields) {
  const JsonView value = at_field(component, fields.gpu);
  const std::string text(value.is_number() ? value.text() : value.string());
  if (fields.format == GpuCountFormat::kProfileCount) {
    const auto count = profile_count(text);
    const bool none = (count && count.value() == 0) || !profile_resource(text, "");
    return none ? "" : text;
  }
  return text == "0" ? "" : text;
}

}  // namespace gpusizer
