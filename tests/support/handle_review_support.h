// Shared by the handle_review tests (review_test.cpp and
// review_malformed_test.cpp): a training pod and the AdmissionReview the
// API server sends for it.
#pragma once

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "support/review_support.h"
#include "support/text_support.h"

namespace gpusizer::review_test {

using nlohmann::json;

// A container with requests equal to limits, mounting the /dev/shm volume.
inline json container(const std::string& name, const std::string& gpus, const std::string& cpu,
                      const std::string& memory) {
  json r = {{"nvidia.com/gpu", gpus}, {"cpu", cpu}, {"memory", memory}};
  return {{"name", name}, {"resources", {{"requests", r}, {"limits", r}}}, {"volumeMounts", {testing::shm_mount()}}};
}

// A training pod with a 32Gi /dev/shm: only its resources are decided.
inline json pod(const std::string& gpus = "4", const std::string& cpu = "8", const std::string& memory = "64Gi") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "train-x"}, {"namespace", "team-a"}}},
          {"spec",
           {{"containers", json::array({container("trainer", gpus, cpu, memory)})},
            {"volumes", json::array({testing::shm_volume()})}}}};
}

// The AdmissionReview v1 request for `object` (uid, kind and operation as given).
inline json review(json object, const std::string& operation = "CREATE", const std::string& ns = "team-a",
                   json kind = {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
            {"kind", kind},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"operation", operation},
            {"namespace", ns},
            {"name", "train-x"},
            {"object", std::move(object)},
            {"dryRun", false}}}};
}

using testing::contains;

}  // namespace gpusizer::review_test
