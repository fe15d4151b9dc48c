#include "gpusizer/admission/component_fields.h"

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
      } else {
        read.limits.add(gpu_resource, Quantity::from_bytes(count.value()));
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
    return count && count.value() == 0 ? "" : text;
  }
  return text == "0" ? "" : text;
}

}  // namespace gpusizer
