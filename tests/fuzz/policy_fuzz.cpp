// parse_policy on arbitrary YAML: either an error a person can read or a
// policy that keeps the promises validation makes (every profile named
// exists, more GPUs never need less), and that the webhook can answer a
// review with.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_check.h"
#include "gpusizer/admission/review.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"

namespace gpusizer::fuzz {
namespace {

constexpr std::string_view kSource = "fuzz.yaml";

// A 4-GPU pod that the default rules would call train, with a template
// name, a label and an annotation for fuzzed rules to match.
const std::string& sample_review() {
  static const std::string review = nlohmann::json::parse(R"({
    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "request": {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
      "operation": "CREATE", "namespace": "research", "name": "finetune-render-x",
      "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
      "object": {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "finetune-render-x", "namespace": "research",
          "labels": {"osmo.group_name": "finetune-job"}, "annotations": {"team": "a"}},
        "spec": {"containers": [
          {"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": "3", "amd.com/gpu": 1, "memory": "64Gi", "cpu": "8"}}},
          {"name": "helper", "resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "500m"}}}]}}}})")
                                        .dump();
  return review;
}

void check_policy(const Policy& policy) {
  if (!policy.find_profile(policy.default_profile)) fail("defaultProfile names a profile", policy.default_profile);
  for (const ProfileRule& rule : policy.profile_rules) {
    if (!policy.find_profile(rule.profile)) fail("every rule names a profile", rule.text);
  }
  for (const auto& [name, profile] : policy.profiles) {
    if (profile.table.empty()) continue;
    // Around every row and far past the last: more GPUs never need less.
    std::set<int64_t> counts = {1, 2, 1 << 20, int64_t{1} << 40};
    for (const TableRow& row : profile.table) {
      for (int64_t g : {row.gpus - 1, row.gpus, row.gpus + 1}) counts.insert(std::max<int64_t>(g, 1));
    }
    std::optional<Requirement> previous;
    for (int64_t gpus : counts) {
      auto need = required_resources(profile, gpus);
      if (!need) fail("a profile with a table sizes", name);
      if (previous && (need->cpu < previous->cpu || need->memory < previous->memory)) {
        fail("more GPUs never need less", name + " at " + std::to_string(gpus) + " GPUs");
      }
      previous = need;
      (void)set_hint(profile, gpus);
    }
  }
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
    const HttpReply reply = handle_review(policy, endpoint, sample_review());
    if (reply.status != 200) fail("a well-formed review is answered", reply.body);
    if (!nlohmann::json::accept(reply.body)) fail("the answer is JSON", reply.body);
  }
}

}  // namespace
}  // namespace gpusizer::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpusizer;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<Policy> policy = parse_policy(text, fuzz::kSource);
  if (!policy) {
    const std::string prefix = "policy " + std::string(fuzz::kSource) + ": ";
    if (!policy.error().starts_with(prefix) || policy.error().size() == prefix.size()) {
      fuzz::fail("an error names the source and the problem", policy.error());
    }
    return 0;
  }
  fuzz::check_policy(policy.value());
  return 0;
}
