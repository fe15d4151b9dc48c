// handle_review on what the API server should never send (Kubernetes
// "Dynamic Admission Control", docs/sources.md): a malformed review is
// answered 400 with a JSON error that names the problem and does not quote
// the body, and a pod of an odd shape never makes it throw.

#include <functional>
#include <ostream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/sizing/policy.h"
#include "support/handle_review_support.h"

namespace gpusizer::review_malformed_test {
namespace {

using nlohmann::json;
using namespace review_test;  // NOLINT(google-build-using-namespace)

TEST(HandleReview, OddPodShapesNeverThrow) {
  // BUG (found by this test; src fixed since): a Pod whose metadata is null
  // or not an object must get an answer (200 or 400); decide_pod's
  // metadata.value("labels", ...) threw json type_error.306 out of
  // handle_review (a 500, which blocks the create under failurePolicy: Fail).
  for (const char* metadata : {"null", "\"x\"", "[]"}) {
    json object = pod();
    object["metadata"] = json::parse(metadata);
    const std::string body = review(object).dump();
    for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
      HttpReply reply;
      EXPECT_NO_THROW(reply = handle_review(default_policy(), endpoint, body)) << metadata;
      EXPECT_TRUE(reply.status == 200 || reply.status == 400) << reply.status;
      EXPECT_TRUE(json::accept(reply.body)) << reply.body;
    }
  }
}

// The fields the training and serving kinds are read from, each of the
// wrong type: answered, never thrown, and nothing denied for them (a GPU
// count that is not a number is denied naming its field, as in any pod).
TEST(HandleReview, WrongTypesWhereTheNewKindsKeepTheirPodsNeverThrow) {
  struct Odd {
    const char* group;
    const char* kind;
    const char* object;
  };
  for (const Odd& odd : {
           Odd{"trainer.kubeflow.org", "TrainJob", R"({"spec": {"trainer": "x"}})"},
           Odd{"trainer.kubeflow.org", "TrainJob", R"({"spec": {"trainer": {"resourcesPerNode": []}}})"},
           Odd{"serving.kserve.io", "InferenceService", R"({"spec": {"predictor": {"containers": {}}}})"},
           Odd{"serving.kserve.io", "InferenceService", R"({"spec": {"predictor": {"model": 4}}})"},
           Odd{"apps.nvidia.com", "NIMService", R"({"spec": []})"},
           Odd{"serving.kserve.io", "LLMInferenceService", R"({"spec": {"prefill": {"template": null}}})"},
           Odd{"example.com", "Unknown", R"({"spec": {"a": [{"containers": "x"}, {"spec": {"containers": 3}}]}})"},
       }) {
    const json kind = {{"group", odd.group}, {"version", "v1"}, {"kind", odd.kind}};
    const std::string body = review(json::parse(odd.object), "CREATE", "team-a", kind).dump();
    for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
      HttpReply reply;
      EXPECT_NO_THROW(reply = handle_review(default_policy(), endpoint, body)) << odd.object;
      EXPECT_EQ(reply.status, 200) << odd.object;
      EXPECT_TRUE(json::parse(reply.body)["response"]["allowed"].get<bool>()) << odd.object << reply.body;
    }
  }
  const json train_job = {{"group", "trainer.kubeflow.org"}, {"version", "v1alpha1"}, {"kind", "TrainJob"}};
  const json many =
      json::parse(R"({"spec": {"trainer": {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "many"}}}}})");
  const HttpReply reply =
      handle_review(default_policy(), Endpoint::kValidate, review(many, "CREATE", "team-a", train_job).dump());
  EXPECT_NE(reply.body.find("TrainJob team-a/train-x: spec.trainer.resourcesPerNode.limits.nvidia.com/gpu quantity "
                            "\\\"many\\\""),
            std::string::npos)
      << reply.body;
}

// ---------------------------------------------------------------------------
// Malformed reviews: 400 with a JSON error naming the problem.

struct Bad {
  std::string what;
  std::string body;
  ProblemCode code;   // what callers branch on
  std::string path;   // the field it is about; empty: the whole body
  std::string names;  // must appear in the error, for the person reading it
};

std::ostream& operator<<(std::ostream& os, const Bad& b) { return os << b.what; }

class BadRequestTest : public ::testing::TestWithParam<Bad> {};

TEST_P(BadRequestTest, Answers400WithAJsonError) {
  const Bad& b = GetParam();
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
    const HttpReply reply = handle_review(default_policy(), endpoint, b.body);
    EXPECT_EQ(reply.status, 400) << reply.body;
    json body;
    ASSERT_NO_THROW(body = json::parse(reply.body)) << reply.body;
    ASSERT_TRUE(body.is_object());
    ASSERT_TRUE(body.contains("error")) << reply.body;
    ASSERT_TRUE(body["error"].is_string());
    EXPECT_TRUE(contains(body["error"].get<std::string>(), b.names)) << reply.body;
    EXPECT_EQ(reply.outcome.decision, ReviewOutcome::Decision::kError);
    ASSERT_TRUE(reply.outcome.problem);
    EXPECT_EQ(reply.outcome.problem->code, b.code) << to_string(reply.outcome.problem->code);
    EXPECT_EQ(reply.outcome.problem->path, b.path);
    EXPECT_EQ(reply.outcome.problem->message, body["error"].get<std::string>());
  }
}

std::string with(const std::function<void(json&)>& edit) {
  json r = review(pod());
  edit(r);
  return r.dump();
}

std::string truncated() {
  const std::string full = review(pod()).dump();
  return full.substr(0, full.size() / 2);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadRequestTest,
    ::testing::Values(Bad{"invalid_json", "{not json", ProblemCode::kSyntax, "", "not valid JSON"},
                      Bad{"empty_body", "", ProblemCode::kSyntax, "", "not valid JSON"},
                      Bad{"truncated_json", truncated(), ProblemCode::kSyntax, "", "not valid JSON"},
                      Bad{"array_body", "[1,2]", ProblemCode::kWrongType, "", "JSON object"},
                      Bad{"string_body", "\"AdmissionReview\"", ProblemCode::kWrongType, "", "JSON object"},
                      Bad{"wrong_api_version", with([](json& r) { r["apiVersion"] = "admission.k8s.io/v1beta1"; }),
                          ProblemCode::kBadValue, "apiVersion", "admissionReviewVersions: [v1]"},
                      Bad{"missing_api_version", with([](json& r) { r.erase("apiVersion"); }), ProblemCode::kBadValue,
                          "apiVersion", "admissionReviewVersions: [v1]"},
                      Bad{"wrong_kind", with([](json& r) { r["kind"] = "Pod"; }), ProblemCode::kBadValue, "kind",
                          "kind must be AdmissionReview"},
                      Bad{"missing_request", with([](json& r) { r.erase("request"); }), ProblemCode::kWrongType,
                          "request", "request is missing"},
                      Bad{"request_not_object", with([](json& r) { r["request"] = "x"; }), ProblemCode::kWrongType,
                          "request", "not an object"},
                      Bad{"missing_uid", with([](json& r) { r["request"].erase("uid"); }), ProblemCode::kWrongType,
                          "request.uid", "request.uid is missing"},
                      Bad{"empty_uid", with([](json& r) { r["request"]["uid"] = ""; }), ProblemCode::kWrongType,
                          "request.uid", "non-empty string"},
                      Bad{"numeric_uid", with([](json& r) { r["request"]["uid"] = 7; }), ProblemCode::kWrongType,
                          "request.uid", "non-empty string"},
                      Bad{"pod_create_object_string", with([](json& r) { r["request"]["object"] = "pod"; }),
                          ProblemCode::kWrongType, "request.object", "as a JSON object"},
                      Bad{"pod_create_object_null", with([](json& r) { r["request"]["object"] = nullptr; }),
                          ProblemCode::kWrongType, "request.object", "as a JSON object"},
                      Bad{"pod_create_object_missing", with([](json& r) { r["request"].erase("object"); }),
                          ProblemCode::kWrongType, "request.object", "as a JSON object"}),
    [](const auto& info) { return info.param.what; });

TEST(HandleReview, NumbersOutOfRangeAreMalformedNotACrash) {
  const HttpReply reply =
      handle_review(default_policy(), Endpoint::kMutate,
                    R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","x":1e999}})");
  EXPECT_EQ(reply.status, 400);
  ASSERT_TRUE(reply.outcome.problem);
  EXPECT_EQ(reply.outcome.problem->code, ProblemCode::kSyntax) << reply.outcome.problem->message;
}

TEST(HandleReview, ParseErrorsDoNotQuoteTheBody) {
  // A truncated body can end inside an env value; the error must say where,
  // not repeat what.
  const HttpReply reply =
      handle_review(default_policy(), Endpoint::kMutate, R"({"request":{"object":{"env":[{"value":"hunter2-secret)");
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(reply.body.find("hunter2"), std::string::npos) << reply.body;
  ASSERT_TRUE(reply.outcome.problem);
  const std::string& message = reply.outcome.problem->message;
  EXPECT_EQ(reply.outcome.problem->code, ProblemCode::kSyntax);
  EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;
  EXPECT_NE(message.find("line 1, column"), std::string::npos) << message;
}

}  // namespace
}  // namespace gpusizer::review_malformed_test
