// Shared by the decide_pod tests (pod_decision_test.cpp and the
// pod_decision_*_test.cpp files beside it): pods written as nlohmann JSON,
// decide_pod run on them with the patch applied by nlohmann's RFC 6902
// implementation, and matchers for the lines a decision writes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/pod_decision.h"
#include "gpusizer/json/json_patch.h"
#include "gpusizer/sizing/policy.h"
#include "support/text_support.h"

namespace gpusizer::pod_decision_test {

using nlohmann::json;

inline constexpr const char* kDescription = "pod default/train-x";

// Its implicit members are noexcept (nlohmann::json's move and destructor
// are); clang-tidy 14 follows json's internals to a throw they cannot reach.
struct Outcome {  // NOLINT(bugprone-exception-escape)
  PodDecision decision;
  json ops;
  json patched;  // the pod with ops applied
};

inline json apply_ops(const json& doc, const json& ops) {
  try {
    return doc.patch(ops);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "patch does not apply: " << e.what() << "\nops: " << ops.dump(1) << "\ndoc: " << doc.dump(1);
    return doc;
  }
}

// quantity_from_json on a value written as nlohmann JSON.
inline Result<Quantity> quantity_of(const json& value) {
  JsonReader reader;
  return quantity_from_json(reader.view_of(value));
}

// `cluster`: what is known of the cluster; the pod is in namespace "default".
inline Outcome run(const json& pod, Endpoint endpoint = Endpoint::kMutate, Mode mode = Mode::kMutate,
                   const Policy& policy = default_policy(), const ClusterView& cluster = {}) {
  JsonReader reader;
  const JsonView view = reader.view_of(pod);
  PatchBuilder patch(view);
  PodTarget target{{view}, {kDescription, mode}};
  target.cluster = cluster;
  target.namespace_name = "default";
  PodDecision decision = decide_pod(policy, endpoint, target, patch);
  const json ops = patch.operations();
  return Outcome{std::move(decision), ops, apply_ops(pod, ops)};
}

inline Outcome validate(const json& pod, Mode mode = Mode::kMutate, const Policy& policy = default_policy(),
                        const ClusterView& cluster = {}) {
  return run(pod, Endpoint::kValidate, mode, policy, cluster);
}

inline Policy policy_from(const std::string& yaml) {
  auto parsed = parse_policy(yaml, "test");
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error());
  return parsed.ok() ? parsed.value() : default_policy();
}

using testing::contains;

// A container asking for `gpus` GPUs with equal requests and limits.
inline json gpu_container(const std::string& name, json gpus, json cpu, json memory,
                          const std::string& gpu_resource = "nvidia.com/gpu") {
  json r = {{gpu_resource, gpus}, {"cpu", cpu}, {"memory", memory}};
  return {{"name", name}, {"image", "pytorch"}, {"resources", {{"requests", r}, {"limits", r}}}};
}

inline json sidecar(const std::string& name = "osmo-ctrl") {
  return {{"name", name},
          {"resources",
           {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}, {"limits", {{"cpu", "500m"}, {"memory", "512Mi"}}}}}};
}

// A pod of these containers. Those with GPUs mount a 32Gi memory-backed
// /dev/shm, as a training pod should (tests of the /dev/shm rule remove it).
inline json pod_of(json containers, json labels = nullptr, json annotations = nullptr) {
  json metadata = {{"name", "train-x"}, {"namespace", "default"}};
  if (!labels.is_null()) metadata["labels"] = std::move(labels);
  if (!annotations.is_null()) metadata["annotations"] = std::move(annotations);
  json spec = {{"containers", containers}};
  for (json& container : spec["containers"]) {
    if (!container.is_object() || !container.contains("resources")) continue;
    const std::string text = container["resources"].dump();
    if (!contains(text, "nvidia.com/gpu") && !contains(text, "amd.com/gpu")) continue;
    container["volumeMounts"] = json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}}});
    spec["volumes"] = json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "32Gi"}}}}});
  }
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", spec}};
}

inline json one_gpu_pod(json gpus, json cpu = "1", json memory = "1Gi") {
  return pod_of(json::array({gpu_container("trainer", std::move(gpus), std::move(cpu), std::move(memory))}));
}

// A copy, so reading a key the patch failed to add fails the test instead of
// tripping nlohmann's assertion on const operator[].
inline json resources_of(const json& pod, std::size_t i = 0, const std::string& list = "containers") {
  return pod.value(json::json_pointer("/spec/" + list + "/" + std::to_string(i) + "/resources"), json());
}

// True when one line holds every part (wording around the numbers may vary).
inline bool has_line(const std::vector<std::string>& lines, const std::vector<std::string>& parts) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
    return std::all_of(parts.begin(), parts.end(), [&](const std::string& part) { return contains(line, part); });
  });
}

inline std::string all(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += "  [" + line + "]\n";
  return out;
}

}  // namespace gpusizer::pod_decision_test
