// handle_review on in-place resizes (KEP-1287: an UPDATE of the
// pods/resize subresource, whose object is the whole Pod): a resize that
// lowers a GPU pod below its floors is warned about in mutate mode (no
// patch can fix a resize) and denied in enforce mode, as at creation.

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/sizing/policy.h"
#include "support/pod_decision_support.h"
#include "support/review_support.h"

namespace gpusizer::review_resize_test {
namespace {

using nlohmann::json;

// A sized 4-GPU pod, and the resize of its trainer's memory to `memory`.
json resize_review(const std::string& memory, const std::string& sub_resource = "resize") {
  json pod =
      testing::gpu_pod("train-x", {{"requests", {{"cpu", "32"}, {"memory", "192Gi"}, {"ephemeral-storage", "300Gi"}}},
                                   {"limits", {{"nvidia.com/gpu", "4"}, {"memory", "192Gi"}}}});
  json resized = pod;
  resized["spec"]["containers"][0]["resources"]["requests"]["memory"] = memory;
  resized["spec"]["containers"][0]["resources"]["limits"]["memory"] = memory;
  json review = testing::admission_review(resized, "team-a", "UPDATE");
  review["request"]["oldObject"] = pod;
  review["request"]["subResource"] = sub_resource;
  return review;
}

json answer(const json& review, Endpoint endpoint, const Policy& policy = default_policy()) {
  const HttpReply reply = handle_review(policy, endpoint, review.dump());
  EXPECT_EQ(reply.status, 200) << reply.body;
  return json::parse(reply.body)["response"];
}

TEST(Resize, LoweringBelowTheFloorIsWarnedInMutateMode) {
  const json response = answer(resize_review("64Gi"), Endpoint::kValidate);
  EXPECT_TRUE(response["allowed"].get<bool>()) << response.dump();
  EXPECT_EQ(response.value("warnings", json::array()),
            json::array({"would deny: container \"trainer\": memory 64Gi is below 192Gi for 4 GPUs (train profile)"}));
}

TEST(Resize, LoweringBelowTheFloorIsDeniedInEnforceMode) {
  const json response =
      answer(resize_review("64Gi"), Endpoint::kValidate, pod_decision_test::policy_from("mode: enforce\n"));
  EXPECT_FALSE(response["allowed"].get<bool>()) << response.dump();
  EXPECT_NE(response["status"]["message"].get<std::string>().find("4 GPUs need memory >= 192Gi"), std::string::npos)
      << response.dump();
}

TEST(Resize, ARaiseOrAnotherSubresourceIsLeftAlone) {
  EXPECT_FALSE(answer(resize_review("256Gi"), Endpoint::kValidate).contains("warnings"));
  EXPECT_FALSE(answer(resize_review("64Gi", "status"), Endpoint::kValidate).contains("warnings"));
  // The mutating endpoint patches no resize (none is registered for it).
  const json mutated = answer(resize_review("64Gi"), Endpoint::kMutate);
  EXPECT_FALSE(mutated.contains("patch")) << mutated.dump();
  EXPECT_FALSE(mutated.contains("warnings")) << mutated.dump();
}

}  // namespace
}  // namespace gpusizer::review_resize_test
