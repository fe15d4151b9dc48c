// decide_pod on the validating endpoint and for what it warns about: a
// denial says what to set; pods without GPUs and malformed pods pass
// untouched with a reason.

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/pod_decision.h"
#include "gpusizer/check/explain.h"
#include "gpusizer/json/json_patch.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"
#include "support/pod_decision_support.h"

namespace gpusizer::pod_decision_validate_test {
namespace {

using namespace pod_decision_test;  // NOLINT(google-build-using-namespace)

// ---------------------------------------------------------------------------
// Validate.

TEST(DecidePodValidate, UndersizedMemoryWithFourGpusIsDeniedWithTheFix) {
  const json pod = one_gpu_pod("4", "8", "64Gi");
  Outcome r = validate(pod);
  EXPECT_TRUE(r.ops.empty()) << r.ops.dump();
  ASSERT_EQ(r.decision.denials.size(), 1u) << all(r.decision.denials);
  const std::string& d = r.decision.denials[0];
  for (const char* part : {"pod default/train-x", "container \"trainer\"", "4 GPUs", "memory >= 192Gi", "64Gi",
                           "set memory to 192Gi and cpu to 32", "train profile"}) {
    EXPECT_TRUE(contains(d, part)) << "missing \"" << part << "\" in: " << d;
  }
  EXPECT_EQ(d.rfind(kDescription, 0), 0u) << d;
  EXPECT_FALSE(contains(d, "OSMO")) << "not an OSMO task's pod: " << d;
}

TEST(DecidePodValidate, AnOsmoTaskPodsDenialEndsWithTheValuesToSubmit) {
  const json pod = pod_of(json::array({gpu_container("trainer", "4", "8", "64Gi")}),
                          {{"osmo.group_name", "finetune-job"}, {"osmo.task_name", "finetune"}});
  Outcome r = validate(pod);
  ASSERT_EQ(r.decision.denials.size(), 1u) << all(r.decision.denials);
  EXPECT_TRUE(contains(r.decision.denials[0],
                       "set memory to 192Gi and cpu to 32 (OSMO: --set train_gpu=4 train_cpu=32 train_memory=192Gi)"))
      << r.decision.denials[0];
}

TEST(DecidePodValidate, EnforceModeDeniesTheSame) {
  Outcome r = validate(one_gpu_pod("2", "16", "64Gi"), Mode::kEnforce);
  ASSERT_EQ(r.decision.denials.size(), 1u) << all(r.decision.denials);
  EXPECT_TRUE(contains(r.decision.denials[0], "set memory to 96Gi")) << r.decision.denials[0];
  EXPECT_TRUE(contains(r.decision.denials[0], "2 GPUs")) << r.decision.denials[0];
}

TEST(DecidePodValidate, OneGpuUndersizedIsOnlyWarned) {
  Outcome r = validate(one_gpu_pod("1", "4", "16Gi"));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  const auto& w = r.decision.warnings;
  EXPECT_TRUE(has_line(w, {"container \"trainer\"", "memory 16Gi", "64Gi", "1 GPU"})) << all(w);
  EXPECT_TRUE(has_line(w, {"cpu 4 ", " 16 ", "1 GPU"})) << all(w);
  EXPECT_TRUE(has_line(w, {"ephemeral-storage unset", "300Gi"})) << all(w);
  for (const auto& w : r.decision.warnings) EXPECT_LT(w.size(), 120u) << w;
}

TEST(DecidePodValidate, DenyFromGpusIsThePolicyThreshold) {
  const Policy strict = policy_from("denyFromGpus: 1\n");
  EXPECT_EQ(validate(one_gpu_pod("1", "16", "16Gi"), Mode::kMutate, strict).decision.denials.size(), 1u);
  const Policy lax = policy_from("denyFromGpus: 8\n");
  Outcome r = validate(one_gpu_pod("4", "32", "64Gi"), Mode::kMutate, lax);
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"memory 64Gi", "192Gi", "4 GPUs"})) << all(r.decision.warnings);
}

TEST(DecidePodValidate, OnlyMemoryIsDeniedCpuAndStorageAreWarned) {
  json c = gpu_container("trainer", "4", "8", "192Gi");
  Outcome r = validate(pod_of(json::array({c})));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"cpu 8 ", " 32 "})) << all(r.decision.warnings);
  EXPECT_TRUE(has_line(r.decision.warnings, {"ephemeral-storage unset", "300Gi"})) << all(r.decision.warnings);
  EXPECT_FALSE(has_line(r.decision.warnings, {"memory"})) << all(r.decision.warnings);
}

TEST(DecidePodValidate, OptedOutPodIsDeniedNamingTheAnnotation) {
  const json pod =
      pod_of(json::array({gpu_container("trainer", "4", "8", "64Gi")}), nullptr, {{kMutateOptOutKey, "false"}});
  Outcome r = validate(pod);
  ASSERT_EQ(r.decision.denials.size(), 1u);
  EXPECT_TRUE(contains(r.decision.denials[0], "gpu-sizer.io/mutate=false")) << r.decision.denials[0];
}

TEST(DecidePodValidate, SplitPodDenialNamesTheShare) {
  const json pod =
      pod_of(json::array({gpu_container("rank-a", "2", "16", "96Gi"), gpu_container("rank-b", "2", "16", "64Gi")}),
             {{"osmo.group_name", "finetune-job"}});
  Outcome r = validate(pod);
  ASSERT_EQ(r.decision.denials.size(), 1u) << all(r.decision.denials);
  const std::string& d = r.decision.denials[0];
  EXPECT_TRUE(contains(d, "container \"rank-b\"")) << d;
  EXPECT_TRUE(contains(d, "2 of 4 GPUs")) << d;
  EXPECT_TRUE(contains(d, "memory >= 96Gi")) << d;
  EXPECT_TRUE(contains(d, "(OSMO: --set train_gpu=4 train_cpu=32 train_memory=192Gi)")) << "the pod's count: " << d;
}

struct Render {
  std::string what;
  json labels;
  json annotations;
  std::string name;
};
std::ostream& operator<<(std::ostream& os, const Render& c) { return os << c.what; }

class RenderTest : public ::testing::TestWithParam<Render> {};

TEST_P(RenderTest, TwoGpusAreDeniedOneIsFine) {
  const Render& c = GetParam();
  auto make = [&](const char* gpus) {
    json pod = pod_of(json::array({gpu_container("render", gpus, "4", "16Gi")}), c.labels, c.annotations);
    pod["metadata"]["name"] = c.name;
    return pod;
  };
  Outcome two = validate(make("2"));
  EXPECT_EQ(two.decision.profile, "render");
  ASSERT_EQ(two.decision.denials.size(), 1u) << all(two.decision.denials);
  const std::string& d = two.decision.denials[0];
  EXPECT_TRUE(contains(d, "set the GPU count to 1")) << d;
  EXPECT_EQ(contains(d, "(OSMO: --set render_gpu=1)"), c.what == "osmo_group") << d;
  EXPECT_TRUE(contains(d, "render profile")) << d;
  EXPECT_TRUE(contains(d, "2 GPUs")) << d;
  EXPECT_EQ(d.rfind(kDescription, 0), 0u) << d;

  Outcome one = validate(make("1"));
  EXPECT_EQ(one.decision.profile, "render");
  EXPECT_TRUE(one.decision.denials.empty()) << all(one.decision.denials);
  EXPECT_TRUE(one.decision.warnings.empty()) << all(one.decision.warnings);
  EXPECT_TRUE(run(make("1")).ops.empty());  // no table: nothing to raise
  EXPECT_TRUE(run(make("2")).ops.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Selections, RenderTest,
    ::testing::Values(Render{"osmo_group", {{"osmo.group_name", "render-stage"}}, nullptr, "wf-1-render-stage-0"},
                      Render{"profile_label", {{"gpu-sizer.io/profile", "render"}}, nullptr, "x"},
                      Render{"profile_annotation", nullptr, {{"gpu-sizer.io/profile", "render"}}, "x"},
                      Render{"name", nullptr, nullptr, "scene-render-7"}),
    [](const auto& info) { return info.param.what; });

TEST(DecidePodValidate, GenerateNameSelectsTheProfileWhenNameIsEmpty) {
  json pod = pod_of(json::array({gpu_container("a", "2", "4", "16Gi")}));
  pod["metadata"].erase("name");
  pod["metadata"]["generateName"] = "augment-";
  Outcome r = validate(pod);
  EXPECT_EQ(r.decision.profile, "augment");
  ASSERT_EQ(r.decision.denials.size(), 1u);
  EXPECT_TRUE(contains(r.decision.denials[0], "augment profile")) << r.decision.denials[0];
  EXPECT_TRUE(contains(r.decision.denials[0], "set the GPU count to 1")) << r.decision.denials[0];
}

TEST(DecidePodValidate, UnknownProfileLabelIsDeniedAndNotPatched) {
  const json pod = pod_of(json::array({gpu_container("t", "4", "1", "1Gi")}), {{"gpu-sizer.io/profile", "trainn"}});
  Outcome v = validate(pod);
  ASSERT_EQ(v.decision.denials.size(), 1u) << all(v.decision.denials);
  EXPECT_EQ(v.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kUnknownProfile});
  EXPECT_TRUE(contains(v.decision.denials[0], "trainn")) << v.decision.denials[0];
  EXPECT_TRUE(contains(v.decision.denials[0], "augment, infer, render, train")) << v.decision.denials[0];
  EXPECT_TRUE(run(pod).ops.empty());
}

struct Malformed {
  std::string what;
  json pod;
  ProblemCode code;                   // the first problem's: what callers branch on
  std::string path;                   // ... and the field it is about
  std::vector<std::string> contains;  // in the denial, for the person reading it
};
std::ostream& operator<<(std::ostream& os, const Malformed& c) { return os << c.what; }

class MalformedTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedTest, DeniedNamingTheFieldAndNeverPatched) {
  const Malformed& c = GetParam();
  Outcome v = validate(c.pod);
  ASSERT_FALSE(v.decision.denials.empty()) << c.pod.dump();
  ASSERT_FALSE(v.decision.problems.empty()) << all(v.decision.denials);
  EXPECT_EQ(v.decision.problems[0].code, c.code) << to_string(v.decision.problems[0].code);
  EXPECT_EQ(v.decision.problems[0].path, c.path);
  EXPECT_EQ(v.decision.denial_reasons[0], DenialReason::kInvalid);
  EXPECT_EQ(v.decision.denials[0], v.decision.problems[0].message);
  const std::string denials = all(v.decision.denials);
  for (const auto& part : c.contains)
    EXPECT_TRUE(contains(denials, part)) << "missing \"" << part << "\" in:\n" << denials;
  EXPECT_TRUE(contains(denials, kDescription)) << denials;
  Outcome m = run(c.pod);
  EXPECT_TRUE(m.ops.empty()) << m.ops.dump();
  EXPECT_TRUE(validate(c.pod, Mode::kEnforce).decision.denials.size() == v.decision.denials.size());
}

json with_resource(const char* map, const char* resource, json value, json pod = one_gpu_pod("2", "16", "96Gi")) {
  pod["spec"]["containers"][0]["resources"][map][resource] = std::move(value);
  return pod;
}

json mismatched_gpus() {
  json pod = one_gpu_pod("2", "16", "96Gi");
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "4";
  return pod;
}

json bad_second_container() {
  json pod = pod_of(json::array({sidecar(), gpu_container("t", "2", "16", "96Gi")}));
  pod["spec"]["containers"][1]["resources"]["limits"]["memory"] = "96gi";
  return pod;
}

// The sized annotation goes into metadata.annotations, which JSON Patch
// cannot add to when either is not a map (custom resources reach the
// webhook unvalidated).
json with_metadata(json metadata) {
  json pod = one_gpu_pod("2", "16", "96Gi");
  pod["metadata"] = std::move(metadata);
  return pod;
}

json containers_over_any_node() {
  // Each container's count is readable; together they pass any node.
  return pod_of(json::array({gpu_container("a", "1048576", "1", "1Gi"), gpu_container("b", "1", "1", "1Gi")}));
}

json fractional_only() {
  // No whole GPU anywhere: the pod may still hold GPUs, so it is decided.
  return pod_of(json::array({gpu_container("t", "0.5", "1", "1Gi")}));
}

INSTANTIATE_TEST_SUITE_P(
    Pods, MalformedTest,
    ::testing::Values(
        Malformed{"fractional_gpu",
                  fractional_only(),
                  ProblemCode::kBadValue,
                  "spec.containers[0].resources",
                  {"spec.containers[0].resources", "nvidia.com/gpu", "whole number", "500m"}},
        Malformed{"fractional_numeric_gpu",
                  pod_of(json::array({gpu_container("t", 1.5, "1", "1Gi")})),
                  ProblemCode::kBadValue,
                  "spec.containers[0].resources",
                  {"spec.containers[0].resources", "nvidia.com/gpu", "whole number"}},
        Malformed{"gpu_request_differs_from_limit",
                  mismatched_gpus(),
                  ProblemCode::kInconsistent,
                  "spec.containers[0].resources",
                  {"spec.containers[0].resources", "nvidia.com/gpu", "differ"}},
        Malformed{"gpus_past_any_node",
                  pod_of(json::array({gpu_container("t", "2000000", "1", "1Gi")})),
                  ProblemCode::kTooLarge,
                  "spec.containers[0].resources",
                  {"more than any node has"}},
        Malformed{"containers_together_past_any_node",
                  containers_over_any_node(),
                  ProblemCode::kTooLarge,
                  "",
                  {"its containers ask for", "together"}},
        Malformed{"invalid_memory_quantity",
                  with_resource("limits", "memory", "1KB"),
                  ProblemCode::kBadValue,
                  "spec.containers[0].resources.limits.memory",
                  {"spec.containers[0].resources.limits.memory", "1KB"}},
        Malformed{"negative_memory",
                  with_resource("requests", "memory", "-1Gi"),
                  ProblemCode::kBadValue,
                  "spec.containers[0].resources.requests.memory",
                  {"spec.containers[0].resources.requests.memory", "negative"}},
        Malformed{"negative_numeric_cpu",
                  with_resource("requests", "cpu", -2),
                  ProblemCode::kBadValue,
                  "spec.containers[0].resources.requests.cpu",
                  {"spec.containers[0].resources.requests.cpu", "negative"}},
        Malformed{"boolean_quantity",
                  with_resource("limits", "ephemeral-storage", true),
                  ProblemCode::kWrongType,
                  "spec.containers[0].resources.limits.ephemeral-storage",
                  {"spec.containers[0].resources.limits.ephemeral-storage"}},
        Malformed{"invalid_gpu_quantity",
                  with_resource("limits", "nvidia.com/gpu", "two",
                                pod_of(json::array({{{"name", "t"}, {"resources", {{"limits", json::object()}}}}}))),
                  ProblemCode::kBadValue,
                  "spec.containers[0].resources.limits.nvidia.com/gpu",
                  {"spec.containers[0].resources.limits.nvidia.com/gpu", "two"}},
        Malformed{"second_container_bad_quantity",
                  bad_second_container(),
                  ProblemCode::kBadValue,
                  "spec.containers[1].resources.limits.memory",
                  {"spec.containers[1].resources.limits.memory", "96gi"}},
        // BUG (found by tests/fuzz/review_fuzz): these were patched with an
        // `add` under a list or a string, which no API server applies.
        Malformed{"metadata_not_an_object",
                  with_metadata(json::array({"x"})),
                  ProblemCode::kWrongType,
                  "metadata",
                  {"metadata is not an object"}},
        Malformed{"annotations_not_an_object",
                  with_metadata({{"name", "train-x"}, {"annotations", json::array({"x"})}}),
                  ProblemCode::kWrongType,
                  "metadata.annotations",
                  {"metadata.annotations is not an object"}},
        Malformed{"annotations_a_string",
                  with_metadata({{"name", "train-x"}, {"annotations", "x"}}),
                  ProblemCode::kWrongType,
                  "metadata.annotations",
                  {"metadata.annotations is not an object"}}),
    [](const auto& info) { return info.param.what; });

TEST(DecidePodValidate, AuditModeNeverDeniesAndPrefixesWarnings) {
  // Every audit warning, "would deny" and "would raise" alike, starts with
  // "audit:" so people and log filters can tell them from real findings.
  const std::vector<json> pods = {
      one_gpu_pod("4", "8", "64Gi"),  // memory would be denied, cpu raised
      one_gpu_pod("1", "1", "1Gi"),   // everything would be raised
      fractional_only(),              // a malformed GPU field
      pod_of(json::array({gpu_container("render", "2", "4", "16Gi")}), {{"osmo.group_name", "render"}}),
  };
  for (const json& pod : pods) {
    Outcome r = validate(pod, Mode::kAudit);
    EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
    EXPECT_TRUE(r.ops.empty());
    EXPECT_FALSE(r.decision.warnings.empty()) << pod.dump();
    for (const auto& w : r.decision.warnings) {
      EXPECT_EQ(w.rfind("audit:", 0), 0u) << w;
      EXPECT_LT(w.size(), 120u) << w;
    }
  }
}

TEST(DecidePodValidate, AuditModeSaysWhatWouldBeDenied) {
  Outcome r = validate(one_gpu_pod("4", "32", "64Gi"), Mode::kAudit);
  EXPECT_TRUE(has_line(r.decision.warnings, {"audit: would deny: ", "memory 64Gi", "192Gi"}))
      << all(r.decision.warnings);
}

const std::string kLongName(63, 'n');

json long_name_pod() {
  json pod = pod_of(json::array({gpu_container(kLongName, "2", "1", "1Gi"), gpu_container("second", "2", "1", "1Gi")}),
                    {{"osmo.group_name", "finetune-job"}});
  pod["spec"]["containers"][1]["name"] = std::string(62, 'm') + "z";
  return pod;
}

TEST(DecidePodWarnings, EveryWarningIsUnder120CharactersWithLongNames) {
  const json pod = long_name_pod();
  std::size_t seen = 0;
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
    for (Mode mode : {Mode::kMutate, Mode::kEnforce, Mode::kAudit}) {
      Outcome r = run(pod, endpoint, mode);
      for (const auto& w : r.decision.warnings) {
        ++seen;
        EXPECT_LT(w.size(), 120u) << to_string(mode) << ": " << w;
      }
    }
  }
  EXPECT_GT(seen, 5u);
}

TEST(DecidePodWarnings, LongContainerNamesAreShortenedNotTheNumbers) {
  // BUG (found by this test; src fixed since): in audit mode the "would
  // deny" text was fitted to 119 characters (shortening the name) before
  // "audit: would deny: " was prefixed and the whole line cut again, so it
  // ended "...for ..." and the GPU count and profile were lost.
  const json pod = pod_of(json::array({gpu_container(kLongName, "4", "8", "64Gi")}));
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
    for (Mode mode : {Mode::kMutate, Mode::kAudit}) {
      Outcome r = run(pod, endpoint, mode);
      for (const auto& w : r.decision.warnings) {
        EXPECT_LT(w.size(), 120u) << w;
        EXPECT_TRUE(contains(w, "192Gi") || contains(w, "32") || contains(w, "300Gi")) << w;
        EXPECT_EQ(w.back(), ')') << "numbers cut off: " << w;
      }
    }
  }
}

TEST(DecidePodWarnings, MultibyteNamesAreNotCutInsideACharacter) {
  std::string name;
  for (int i = 0; i < 40; ++i) name += "\xC3\xA9";  // é, 80 bytes
  const json pod = pod_of(json::array({gpu_container(name, "1", "1", "1Gi")}));
  for (Mode mode : {Mode::kMutate, Mode::kAudit}) {
    for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
      Outcome r = run(pod, endpoint, mode);
      for (const auto& w : r.decision.warnings) {
        EXPECT_LT(w.size(), 120u) << w;
        EXPECT_NO_THROW((void)json(w).dump()) << "invalid UTF-8: " << w;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Pods without GPUs are not ours.

TEST(DecidePodNoGpus, NothingAtAll) {
  json bad = pod_of(json::array({sidecar("web")}));
  bad["spec"]["containers"][0]["resources"]["limits"]["memory"] = "1KB";
  const std::vector<json> pods = {
      pod_of(json::array({sidecar("web")})),
      pod_of(json::array({{{"name", "bare"}}})),
      pod_of(json::array({gpu_container("zero", "0", "1", "1Gi")})),
      bad,
      pod_of(json::array({sidecar("web")}), {{"osmo.group_name", "finetune-job"}}),
  };
  for (const json& pod : pods) {
    for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
      for (Mode mode : {Mode::kMutate, Mode::kEnforce, Mode::kAudit}) {
        Outcome r = run(pod, endpoint, mode);
        EXPECT_EQ(r.decision.gpus, 0);
        EXPECT_TRUE(r.decision.profile.empty()) << r.decision.profile;
        EXPECT_TRUE(r.ops.empty()) << pod.dump();
        EXPECT_TRUE(r.decision.warnings.empty()) << all(r.decision.warnings);
        EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
        EXPECT_TRUE(r.decision.changes.empty());
      }
    }
  }
}

TEST(DecidePodRobustness, OddShapesDoNotThrow) {
  // Structurally odd objects must give an answer, never an exception that
  // would turn into a 500 (and, with failurePolicy: Fail, a blocked create).
  // BUG (found by this test; src fixed since): PodReader::read called
  // metadata.value("labels", ...) on whatever metadata was; for null or a
  // non-object nlohmann threw type_error.306.
  const std::vector<json> pods = {
      json::parse(R"({"metadata":null,"spec":{"containers":[]}})"),
      json::parse(R"({"metadata":"x","spec":{"containers":[]}})"),
      json::parse(R"({"metadata":{"labels":null,"annotations":7},"spec":{"containers":[]}})"),
      json::parse(R"({"spec":null})"),
      json::parse(R"({"spec":{"containers":{}}})"),
      json::parse(R"({"spec":{"containers":[1,null,"x"]}})"),
      json::parse(R"({"spec":{"containers":[{"resources":[]}],"initContainers":{}}})"),
      json::parse(R"({"spec":{"containers":[{"resources":{"limits":[],"requests":"x"}}]}})"),
  };
  for (const json& pod : pods) {
    for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
      EXPECT_NO_THROW((void)run(pod, endpoint)) << pod.dump();
    }
  }
}

TEST(DecidePodRobustness, NullMetadataWithGpusStillDecided) {
  // BUG (found by this test; src fixed since): metadata null must read as
  // "no labels, no annotations"; decide_pod threw json type_error.306
  // ("cannot use value() with null").
  json pod = one_gpu_pod("4", "8", "64Gi");
  pod["metadata"] = nullptr;
  Outcome r;
  ASSERT_NO_THROW(r = validate(pod));
  EXPECT_EQ(r.decision.gpus, 4);
  EXPECT_EQ(r.decision.denials.size(), 1u) << all(r.decision.denials);
}

TEST(QuantityFromJson, StringsNumbersAndOthers) {
  ASSERT_TRUE(quantity_of("64Gi").ok());
  EXPECT_EQ(quantity_of("64Gi").value().to_string(), "64Gi");
  ASSERT_TRUE(quantity_of(4).ok());
  EXPECT_EQ(quantity_of(4).value().to_string(), "4");
  ASSERT_TRUE(quantity_of(0.5).ok());
  EXPECT_EQ(quantity_of(0.5).value().to_string(), "500m");
  ASSERT_TRUE(quantity_of(-3).ok());
  EXPECT_TRUE(quantity_of(-3).value().is_negative());
  EXPECT_FALSE(quantity_of("1KB").ok());
  for (const json& v : {json(true), json(nullptr), json::array({1}), json::object()}) {
    const auto q = quantity_of(v);
    ASSERT_FALSE(q.ok()) << v.dump();
    EXPECT_TRUE(contains(q.error(), v.type_name())) << q.error();
  }
}

}  // namespace
}  // namespace gpusizer::pod_decision_validate_test
