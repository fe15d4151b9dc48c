// Compact patches (issue 30): a raised container's resources are one JSON
// Patch operation (the container, when it also gains a /dev/shm mount),
// and nothing the user wrote changes but the raised values. The API server
// decodes and applies every operation of every answer.

#include <cstddef>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/sizing/policy.h"
#include "support/handle_review_support.h"
#include "support/hostile_reviews.h"
#include "support/review_support.h"

namespace gpusizer::compact_patch_test {
namespace {

using nlohmann::json;
using testing::apply_response;
using testing::decode_base64;

json answer(const std::string& body, Endpoint endpoint = Endpoint::kMutate) {
  return json::parse(handle_review(default_policy(), endpoint, body).body);
}

json operations(const json& answered) {
  return json::parse(decode_base64(answered["response"]["patch"].get<std::string>()));
}

TEST(CompactPatch, ALargeWorkflowTakesAtMostThreeOperationsPerContainer) {
  // Each template: its container (resources and the /dev/shm mount), its
  // volumes (the /dev/shm volume) and its metadata (the sized annotation).
  constexpr std::size_t kTemplates = 200;
  const json request = json::parse(testing::hostile_detail::workflow_4gpu_templates(kTemplates));
  const json answered = answer(request.dump());
  const json ops = operations(answered);
  EXPECT_LE(ops.size(), 3 * kTemplates) << ops[0].dump();
  const json workflow = apply_response(request["request"]["object"], answered);
  for (const json& step : workflow["spec"]["templates"]) {
    const json& trainer = step["container"];
    EXPECT_EQ(trainer["resources"]["limits"]["memory"], "192Gi") << trainer.dump();
    EXPECT_EQ(trainer["resources"]["limits"]["nvidia.com/gpu"], "4");
    EXPECT_EQ(trainer["command"], json::array({"torchrun"})) << "what the user wrote is kept";
    ASSERT_EQ(trainer["volumeMounts"].size(), 1u);
    EXPECT_EQ(trainer["volumeMounts"][0]["mountPath"], "/dev/shm");
  }
  // Applying it twice changes nothing.
  json again = request;
  again["request"]["object"] = workflow;
  EXPECT_FALSE(answer(again.dump())["response"].contains("patch"));
}

TEST(CompactPatch, OneOperationOnResourcesKeepsEveryFieldTheUserWrote) {
  json pod = review_test::pod();
  json& resources = pod["spec"]["containers"][0]["resources"];
  resources["limits"]["example.com/nic"] = 1;
  resources["claims"] = json::array({{{"name", "nic"}}});
  pod["spec"]["resourceClaims"] = json::array({{{"name", "nic"}, {"resourceClaimName", "nic-0"}}});
  const json answered = answer(review_test::review(pod).dump());
  const json ops = operations(answered);
  // The resources, and the sized annotation.
  ASSERT_EQ(ops.size(), 2u) << ops.dump();
  EXPECT_EQ(ops[0]["path"], "/spec/containers/0/resources");
  const json patched = apply_response(pod, answered);
  json expected = pod;
  json& raised = expected["spec"]["containers"][0]["resources"];
  for (const char* side : {"requests", "limits"}) {
    raised[side]["cpu"] = "32";
    raised[side]["memory"] = "192Gi";
  }
  raised["requests"]["ephemeral-storage"] = "300Gi";
  expected["metadata"]["annotations"] = patched["metadata"]["annotations"];
  EXPECT_EQ(patched, expected);
}

}  // namespace
}  // namespace gpusizer::compact_patch_test
