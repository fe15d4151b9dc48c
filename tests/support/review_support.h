// Test helpers shared by the unit and integration suites: building
// AdmissionReviews the way the API server sends them, and applying the
// answers the way it applies them.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "gpusizer/check/manifests.h"
#include "gpusizer/util/files.h"

namespace gpusizer::testing {

using nlohmann::json;

// The 32Gi memory-backed /dev/shm a training pod mounts (the /dev/shm rule's
// size), and its mount.
inline json shm_volume() { return {{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "32Gi"}}}}; }
inline json shm_mount() { return {{"name", "dshm"}, {"mountPath", "/dev/shm"}}; }

// A pod with one container "trainer" holding `gpus` nvidia.com/gpu and the
// given resources (requests and limits maps as written), mounting a 32Gi
// /dev/shm so that only the resources decide (tests of the /dev/shm rule
// remove it).
inline json gpu_pod(const std::string& name, json resources, json annotations = json::object(),
                    json labels = json::object()) {
  json metadata = {{"name", name}, {"namespace", "team-a"}};
  if (!annotations.empty()) metadata["annotations"] = std::move(annotations);
  if (!labels.empty()) metadata["labels"] = std::move(labels);
  json container = {{"name", "trainer"}, {"image", "nvcr.io/nvidia/pytorch:24.05-py3"}};
  if (!resources.is_null()) container["resources"] = std::move(resources);
  container["volumeMounts"] = json::array({shm_mount()});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", metadata},
          {"spec",
           {{"restartPolicy", "Never"},
            {"containers", json::array({container})},
            {"volumes", json::array({shm_volume()})}}}};
}

// A pod named "many" with `count` containers, each holding `resources`.
inline json pod_with_containers(std::size_t count, const json& resources) {
  json pod = gpu_pod("many", nullptr);
  json containers = json::array();
  for (std::size_t i = 0; i < count; ++i) {
    containers.push_back({{"name", "c" + std::to_string(i)}, {"image", "busybox"}, {"resources", resources}});
  }
  pod["spec"]["containers"] = std::move(containers);
  return pod;
}

// The AdmissionReview v1 request the API server sends for `object`.
inline json admission_review(const json& object, const std::string& ns = "team-a",
                             const std::string& operation = "CREATE", bool dry_run = false,
                             const std::string& uid = "705ab4f5-6393-11e8-b7cc-42010a800002") {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"requestKind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"operation", operation},
            {"namespace", ns},
            {"name", object["metadata"].value("name", "")},
            {"userInfo", {{"username", "alice"}, {"groups", {"system:authenticated"}}}},
            {"object", object},
            {"oldObject", nullptr},
            {"dryRun", dry_run},
            {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
}

// The API group of an object's apiVersion: "" for "v1", "batch" for "batch/v1".
inline std::string api_group(const json& object) {
  const std::string api_version = object.value("apiVersion", "");
  const auto slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

// The review the API server sends for a workload object: admission_review
// with request.kind taken from the object's apiVersion and kind.
inline json workload_review(const json& object, const std::string& operation = "CREATE") {
  json review = admission_review(object, object["metadata"].value("namespace", ""), operation);
  const std::string api_version = object["apiVersion"];
  const auto slash = api_version.find('/');
  review["request"]["kind"] = {{"group", api_group(object)},
                               {"version", slash == std::string::npos ? api_version : api_version.substr(slash + 1)},
                               {"kind", object["kind"]}};
  return review;
}

// The first document of a manifest file (tests/data/workloads/...), as JSON.
// Throws naming the file when it cannot be read or parsed.
inline json first_manifest_object(const std::string& path) {
  auto text = read_file(path);
  if (!text) throw std::runtime_error(text.error());
  auto manifests = read_manifests(text.value(), path);
  if (!manifests) throw std::runtime_error(manifests.error());
  return manifests.value().documents.at(0).object;
}

inline std::string decode_base64(const std::string& text) {
  std::string out(3 * text.size() / 4 + 3, '\0');
  const int length =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(text.data()),
                      static_cast<int>(text.size()));
  if (length < 0) throw std::runtime_error("invalid base64");
  std::size_t size = static_cast<std::size_t>(length);
  // EVP_DecodeBlock counts the padding as decoded zero bytes.
  for (std::size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --size;
  out.resize(size);
  return out;
}

// The object after the API server applies the response's patch (unchanged
// when there is none). Throws when the patch does not apply, as the API
// server would reject it.
inline json apply_response(const json& object, const json& review_answer) {
  const json& response = review_answer.at("response");
  if (!response.contains("patch")) return object;
  if (response.value("patchType", "") != "JSONPatch") throw std::runtime_error("patch without patchType JSONPatch");
  return object.patch(json::parse(decode_base64(response.at("patch").get<std::string>())));
}

}  // namespace gpusizer::testing
