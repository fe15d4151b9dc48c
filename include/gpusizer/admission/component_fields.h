// A component whose operator reads its GPU count, CPU and memory from
// fields of its own (PodShape::kFields, sizing/workload_kinds.h: Dynamo
// v1alpha1's resources.limits.gpu, VLLMRuntime's resources.gpu, KubeAI's
// resourceProfile), read as one container's resources so that every rule
// sizes it as it sizes a container.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "gpusizer/admission/pod_fields.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/workload_kinds.h"

namespace gpusizer {

// The value at a dotted field path below `object` (ComponentFields'
// paths); absent when a key on the way is missing.
JsonView at_field(JsonView object, std::string_view path);

// The component's CPU and memory, requests and limits from their fields,
// and its GPU count as a limit of its GPU resource (the gpuResource field's
// value, else the policy's first gpuResources); problems name the field
// below `where` (the component's field path). An instance type's count is
// not written: none is read.
ResourcesRead read_component(const Policy& policy, JsonView component, const ComponentFields& fields,
                             const std::function<std::string()>& where);

// The GPU field as written ("nvidia-gpu-h100:8", "4", an instance type),
// for messages; empty when it is unset or asks for none ("0", "<profile>:0",
// KubeAI's "cpu:2").
std::string asked_gpus_text(JsonView component, const ComponentFields& fields);

}  // namespace gpusizer
