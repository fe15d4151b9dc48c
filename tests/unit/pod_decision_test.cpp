// decide_pod is the product: for each pod it must produce a patch the API
// server can apply and that yields exactly the table values, or a denial that
// says what to set. Every mutate test applies the patch with nlohmann's RFC
// 6902 implementation and checks the resulting pod.

#include "gpusizer/admission/pod_decision.h"

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/check/explain.h"
#include "gpusizer/json/json_patch.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"
#include "support/pod_decision_support.h"

namespace gpusizer::pod_decision_test {
namespace {

using namespace pod_decision_test;  // NOLINT(google-build-using-namespace)

// ---------------------------------------------------------------------------
// Mutate: the train table applied.

struct Size {
  int64_t gpus;
  const char* cpu;
  const char* memory;
};

std::ostream& operator<<(std::ostream& os, const Size& s) { return os << s.gpus << " GPUs"; }

class TrainMutateTest : public ::testing::TestWithParam<Size> {};

TEST_P(TrainMutateTest, RaisesRequestsAndLimitsToTheTable) {
  const Size& s = GetParam();
  const json pod = one_gpu_pod(std::to_string(s.gpus));
  Outcome r = run(pod);
  EXPECT_EQ(r.decision.gpus, s.gpus);
  EXPECT_EQ(r.decision.profile, "train");
  EXPECT_TRUE(r.decision.denials.empty());
  const std::string g = std::to_string(s.gpus);
  EXPECT_EQ(
      resources_of(r.patched),
      json({{"requests", {{"nvidia.com/gpu", g}, {"cpu", s.cpu}, {"memory", s.memory}, {"ephemeral-storage", "300Gi"}}},
            {"limits", {{"nvidia.com/gpu", g}, {"cpu", s.cpu}, {"memory", s.memory}}}}))
      << resources_of(r.patched).dump();
  ASSERT_TRUE(r.patched["metadata"].contains("annotations"));
  const std::string sized = r.patched["metadata"]["annotations"].value(kSizedKey, "");
  EXPECT_EQ(sized.rfind("train profile, " + g + (s.gpus == 1 ? " GPU: " : " GPUs: ") + "trainer: ", 0), 0u) << sized;
  EXPECT_TRUE(contains(sized, std::string("memory request 1Gi->") + s.memory)) << sized;
  ASSERT_EQ(r.decision.changes.size(), 1u);
  EXPECT_EQ(r.decision.changes[0].rfind("trainer: ", 0), 0u) << r.decision.changes[0];
  for (const auto& w : r.decision.warnings) EXPECT_LT(w.size(), 120u) << w;
  EXPECT_FALSE(r.decision.warnings.empty());
}

INSTANTIATE_TEST_SUITE_P(Seed, TrainMutateTest,
                         ::testing::Values(Size{1, "16", "64Gi"}, Size{2, "16", "96Gi"}, Size{3, "24", "144Gi"},
                                           Size{4, "32", "192Gi"}, Size{8, "64", "384Gi"}, Size{16, "128", "768Gi"}),
                         [](const auto& info) { return std::to_string(info.param.gpus) + "gpu"; });

TEST(DecidePodMutate, InferProfileByOsmoGroup) {
  const json pod = pod_of(json::array({gpu_container("infer", "4", "2", "8Gi")}),
                          {{"osmo.group_name", "anomaly-infer"}, {"osmo.task_name", "infer-all-defects"}});
  Outcome r = run(pod);
  EXPECT_EQ(r.decision.profile, "infer");
  EXPECT_TRUE(contains(r.decision.profile_reason, "anomaly-infer")) << r.decision.profile_reason;
  EXPECT_EQ(resources_of(r.patched)["requests"],
            json({{"nvidia.com/gpu", "4"}, {"cpu", "16"}, {"memory", "192Gi"}, {"ephemeral-storage", "200Gi"}}));
  EXPECT_EQ(resources_of(r.patched)["limits"], json({{"nvidia.com/gpu", "4"}, {"cpu", "16"}, {"memory", "192Gi"}}));
}

TEST(DecidePodMutate, LimitsOnlyContainerGetsRequestsAndRaisedLimits) {
  const json pod =
      pod_of(json::array({{{"name", "trainer"},
                           {"resources", {{"limits", {{"nvidia.com/gpu", "4"}, {"cpu", "8"}, {"memory", "64Gi"}}}}}}}));
  Outcome r = run(pod);
  EXPECT_EQ(resources_of(r.patched),
            json::parse(R"({"requests":{"cpu":"32","memory":"192Gi","ephemeral-storage":"300Gi"},
                            "limits":{"nvidia.com/gpu":"4","cpu":"32","memory":"192Gi"}})"))
      << resources_of(r.patched).dump();
}

TEST(DecidePodMutate, LimitsOnlyAboveTheTableOnlyAddsWhatIsMissing) {
  // cpu and memory limits already exceed the table: their requests default
  // to the limits, so only ephemeral-storage is added.
  const json pod =
      pod_of(json::array({{{"name", "trainer"},
                           {"resources", {{"limits", {{"nvidia.com/gpu", "2"}, {"cpu", "40"}, {"memory", "1Ti"}}}}}}}));
  Outcome r = run(pod);
  EXPECT_EQ(resources_of(r.patched), json::parse(R"({"requests":{"ephemeral-storage":"300Gi"},
                            "limits":{"nvidia.com/gpu":"2","cpu":"40","memory":"1Ti"}})"))
      << resources_of(r.patched).dump();
}

TEST(DecidePodMutate, LargerValuesAreNeverLowered) {
  json c = gpu_container("trainer", "4", "64", "512Gi");
  c["resources"]["requests"]["ephemeral-storage"] = "1Ti";
  Outcome r = run(pod_of(json::array({c})));
  EXPECT_TRUE(r.ops.empty()) << r.ops.dump();
  EXPECT_TRUE(r.decision.warnings.empty()) << all(r.decision.warnings);
  EXPECT_EQ(r.patched, pod_of(json::array({c})));
}

TEST(DecidePodMutate, OnlyTheUndersizedValueIsRaised) {
  // Request below the table with a generous limit: the request rises, the
  // limit stays; cpu above the table is untouched.
  json c = {{"name", "trainer"},
            {"resources",
             {{"requests", {{"nvidia.com/gpu", "4"}, {"cpu", "48"}, {"memory", "16Gi"}, {"ephemeral-storage", "1Ti"}}},
              {"limits", {{"nvidia.com/gpu", "4"}, {"cpu", "48"}, {"memory", "1Ti"}}}}}};
  Outcome r = run(pod_of(json::array({c})));
  EXPECT_EQ(resources_of(r.patched)["requests"],
            json({{"nvidia.com/gpu", "4"}, {"cpu", "48"}, {"memory", "192Gi"}, {"ephemeral-storage", "1Ti"}}));
  EXPECT_EQ(resources_of(r.patched)["limits"], json({{"nvidia.com/gpu", "4"}, {"cpu", "48"}, {"memory", "1Ti"}}));
  ASSERT_EQ(r.ops.size(), 2u) << r.ops.dump();  // the memory request and the annotation
}

TEST(DecidePodMutate, LimitBelowAnAdequateRequestIsRaised) {
  json c = {
      {"name", "trainer"},
      {"resources",
       {{"requests", {{"nvidia.com/gpu", "2"}, {"cpu", "16"}, {"memory", "96Gi"}, {"ephemeral-storage", "300Gi"}}},
        {"limits", {{"nvidia.com/gpu", "2"}, {"cpu", "16"}, {"memory", "64Gi"}}}}}};
  Outcome r = run(pod_of(json::array({c})));
  EXPECT_EQ(resources_of(r.patched)["limits"]["memory"], "96Gi");
  EXPECT_EQ(resources_of(r.patched)["requests"]["memory"], "96Gi");
}

TEST(DecidePodMutate, NumericQuantities) {
  const json pod = one_gpu_pod(2, 4, "8Gi");
  Outcome r = run(pod);
  EXPECT_EQ(r.decision.gpus, 2);
  json res = resources_of(r.patched);
  EXPECT_EQ(res["requests"]["cpu"], "16");
  EXPECT_EQ(res["requests"]["memory"], "96Gi");
  EXPECT_EQ(res["requests"]["nvidia.com/gpu"], 2);  // left as written
  EXPECT_EQ(res["limits"]["cpu"], "16");
  EXPECT_EQ(res["limits"]["memory"], "96Gi");
  EXPECT_EQ(res["limits"]["nvidia.com/gpu"], 2);
}

TEST(DecidePodMutate, NumericQuantityAboveTheTableIsKept) {
  Outcome r = run(one_gpu_pod(1, 32, "64Gi"));
  EXPECT_EQ(resources_of(r.patched)["requests"]["cpu"], 32);
  EXPECT_EQ(resources_of(r.patched)["limits"]["cpu"], 32);
  EXPECT_EQ(resources_of(r.patched)["requests"]["ephemeral-storage"], "300Gi");
}

TEST(DecidePodMutate, FractionalNumericCpuIsRead) {
  Outcome r = run(one_gpu_pod(1, 0.5, "64Gi"));
  EXPECT_TRUE(contains(all(r.decision.warnings), "cpu request 500m->16")) << all(r.decision.warnings);
  EXPECT_EQ(resources_of(r.patched)["requests"]["cpu"], "16");
}

TEST(DecidePodMutate, NullRequestsMapIsReplaced) {
  const json pod = pod_of(json::array(
      {{{"name", "trainer"},
        {"resources",
         {{"requests", nullptr}, {"limits", {{"nvidia.com/gpu", "1"}, {"cpu", "16"}, {"memory", "8Gi"}}}}}}}));
  Outcome r = run(pod);
  EXPECT_EQ(resources_of(r.patched), json::parse(R"({"requests":{"memory":"64Gi","ephemeral-storage":"300Gi"},
                            "limits":{"nvidia.com/gpu":"1","cpu":"16","memory":"64Gi"}})"))
      << resources_of(r.patched).dump();
}

TEST(DecidePodMutate, PodWithoutMetadataGetsTheAnnotation) {
  json pod = one_gpu_pod("1");
  pod.erase("metadata");
  Outcome r = run(pod);
  EXPECT_TRUE(r.patched["metadata"]["annotations"].contains(kSizedKey)) << r.patched.dump();
}

TEST(DecidePodMutate, TwoGpuContainersSplitThePodNeed) {
  const json pod = pod_of(
      json::array({gpu_container("rank-a", "2", "1", "1Gi"), sidecar(), gpu_container("rank-b", "2", "1", "1Gi")}));
  Outcome r = run(pod);
  EXPECT_EQ(r.decision.gpus, 4);
  for (std::size_t i : {0u, 2u}) {
    EXPECT_EQ(resources_of(r.patched, i)["requests"],
              json({{"nvidia.com/gpu", "2"}, {"cpu", "16"}, {"memory", "96Gi"}, {"ephemeral-storage", "150Gi"}}))
        << i;
    EXPECT_EQ(resources_of(r.patched, i)["limits"], json({{"nvidia.com/gpu", "2"}, {"cpu", "16"}, {"memory", "96Gi"}}))
        << i;
  }
  EXPECT_EQ(resources_of(r.patched, 1), sidecar()["resources"]);
  EXPECT_EQ(r.decision.changes.size(), 2u) << all(r.decision.changes);
  const std::string sized = r.patched["metadata"]["annotations"][kSizedKey];
  EXPECT_TRUE(contains(sized, "rank-a: ") && contains(sized, "rank-b: ")) << sized;
  EXPECT_TRUE(contains(all(r.decision.warnings), "2 of 4 GPUs")) << all(r.decision.warnings);
}

TEST(DecidePodMutate, UnevenSplitRoundsUpAndCoversThePod) {
  const json pod =
      pod_of(json::array({gpu_container("one", "1", "1", "1Gi"), gpu_container("three", "3", "1", "1Gi")}));
  Outcome r = run(pod);
  EXPECT_EQ(r.decision.gpus, 4);
  EXPECT_EQ(resources_of(r.patched, 0)["requests"]["cpu"], "8");
  EXPECT_EQ(resources_of(r.patched, 0)["requests"]["memory"], "48Gi");
  EXPECT_EQ(resources_of(r.patched, 0)["requests"]["ephemeral-storage"], "75Gi");
  EXPECT_EQ(resources_of(r.patched, 1)["requests"]["cpu"], "24");
  EXPECT_EQ(resources_of(r.patched, 1)["requests"]["memory"], "144Gi");
  EXPECT_EQ(resources_of(r.patched, 1)["requests"]["ephemeral-storage"], "225Gi");
}

TEST(DecidePodMutate, InitContainerLargerThanAppContainersHoldsThePod) {
  // The app container already has what one GPU needs, so it stays as is.
  json app = gpu_container("trainer", "1", "16", "64Gi");
  app["resources"]["requests"]["ephemeral-storage"] = "300Gi";
  json pod = pod_of(json::array({app, sidecar()}));
  pod["spec"]["initContainers"] = json::array({gpu_container("warmup", "4", "1", "1Gi")});
  Outcome r = run(pod);
  EXPECT_EQ(r.decision.gpus, 4);
  EXPECT_EQ(resources_of(r.patched, 0, "initContainers")["requests"]["cpu"], "32");
  EXPECT_EQ(resources_of(r.patched, 0, "initContainers")["requests"]["memory"], "192Gi");
  EXPECT_EQ(resources_of(r.patched, 0, "initContainers")["limits"]["memory"], "192Gi");
  EXPECT_EQ(resources_of(r.patched, 0), resources_of(pod, 0));
}

TEST(DecidePodMutate, AppContainersAreSizedEvenWhenAnInitContainerHasMoreGpus) {
  // BUG (found by this test; src fixed since): when the largest init
  // container had more GPUs than the app containers together, only the init
  // container was sized, and a 2-GPU app container left at 64Gi was neither
  // raised nor denied, although memory limits are per container and its two
  // ranks need 96Gi once the init container has finished.
  json pod = pod_of(json::array({gpu_container("trainer", "2", "16", "64Gi")}));
  pod["spec"]["initContainers"] = json::array({gpu_container("warmup", "4", "32", "192Gi")});
  Outcome r = run(pod);
  const auto memory = quantity_of(resources_of(r.patched)["requests"]["memory"]);
  ASSERT_TRUE(memory.ok());
  EXPECT_GE(memory.value(), quantity_of("96Gi").value()) << resources_of(r.patched).dump();
  Outcome v = validate(pod);
  EXPECT_FALSE(v.decision.denials.empty()) << "2-GPU app container at 64Gi was not denied";
}

TEST(DecidePodMutate, InitContainerNotLargerThanAppContainersIsUntouched) {
  for (const char* init_gpus : {"1", "2"}) {
    json pod = pod_of(json::array({gpu_container("trainer", "2", "1", "1Gi")}));
    pod["spec"]["initContainers"] = json::array({gpu_container("osmo-init", init_gpus, "1", "1Gi")});
    Outcome r = run(pod);
    EXPECT_EQ(r.decision.gpus, 2) << init_gpus;
    EXPECT_EQ(resources_of(r.patched, 0)["requests"]["memory"], "96Gi") << init_gpus;
    EXPECT_EQ(resources_of(r.patched, 0, "initContainers"), resources_of(pod, 0, "initContainers")) << init_gpus;
  }
}

TEST(DecidePodMutate, RestartableInitSidecarsCountWithAppContainers) {
  json pod = pod_of(json::array({gpu_container("trainer", "2", "1", "1Gi")}));
  json side = gpu_container("gpu-sidecar", "2", "1", "1Gi");
  side["restartPolicy"] = "Always";
  pod["spec"]["initContainers"] = json::array({gpu_container("plain-init", "3", "1", "1Gi"), side});
  Outcome r = run(pod);
  EXPECT_EQ(r.decision.gpus, 4);  // 2 app + 2 sidecar beat the 3-GPU init
  EXPECT_EQ(resources_of(r.patched, 0)["requests"]["memory"], "96Gi");
  EXPECT_EQ(resources_of(r.patched, 1, "initContainers")["requests"]["memory"], "96Gi");
  EXPECT_EQ(resources_of(r.patched, 1, "initContainers")["requests"]["cpu"], "16");
  EXPECT_EQ(resources_of(r.patched, 0, "initContainers"), resources_of(pod, 0, "initContainers"));
}

TEST(DecidePodMutate, AmdGpusAreCounted) {
  const json pod = pod_of(json::array({gpu_container("trainer", "4", "1", "1Gi", "amd.com/gpu")}));
  Outcome r = run(pod);
  EXPECT_EQ(r.decision.gpus, 4);
  EXPECT_EQ(resources_of(r.patched)["requests"]["memory"], "192Gi");
  EXPECT_EQ(resources_of(r.patched)["limits"]["amd.com/gpu"], "4");
}

TEST(DecidePodMutate, GpuResourcesInOneContainerAreSummed) {
  json c = gpu_container("trainer", "2", "1", "1Gi");
  c["resources"]["requests"]["amd.com/gpu"] = "2";
  c["resources"]["limits"]["amd.com/gpu"] = "2";
  Outcome r = run(pod_of(json::array({c})));
  EXPECT_EQ(r.decision.gpus, 4);
  EXPECT_EQ(resources_of(r.patched)["requests"]["memory"], "192Gi");
}

TEST(DecidePodMutate, OnlyConfiguredGpuResourcesCount) {
  const Policy mig = policy_from("gpuResources: [nvidia.com/mig-3g.20gb]\n");
  Outcome plain = run(one_gpu_pod("4"), Endpoint::kMutate, Mode::kMutate, mig);
  EXPECT_EQ(plain.decision.gpus, 0);
  EXPECT_TRUE(plain.ops.empty());
  Outcome sliced = run(pod_of(json::array({gpu_container("t", "2", "1", "1Gi", "nvidia.com/mig-3g.20gb")})),
                       Endpoint::kMutate, Mode::kMutate, mig);
  EXPECT_EQ(sliced.decision.gpus, 2);
  EXPECT_EQ(resources_of(sliced.patched)["requests"]["memory"], "96Gi");
}

TEST(DecidePodMutate, SidecarWithoutGpusIsUntouched) {
  const json pod = pod_of(json::array({sidecar("osmo-ctrl"), gpu_container("trainer", "4", "1", "1Gi")}));
  Outcome r = run(pod);
  EXPECT_EQ(r.patched["spec"]["containers"][0], pod["spec"]["containers"][0]);
  for (const auto& op : r.ops) EXPECT_FALSE(contains(op["path"].get<std::string>(), "/containers/0/")) << op.dump();
}

TEST(DecidePodMutate, SizedAnnotationAddedBesideExistingAnnotations) {
  const json pod = pod_of(json::array({gpu_container("trainer", "4", "1", "1Gi")}), nullptr, {{"team", "cv"}});
  Outcome r = run(pod);
  json annotations = r.patched["metadata"]["annotations"];
  EXPECT_EQ(annotations["team"], "cv");
  ASSERT_TRUE(annotations.contains(kSizedKey));
  EXPECT_EQ(annotations.size(), 2u);
}

TEST(DecidePodMutate, SizedAnnotationReplacesANullAnnotationsMap) {
  json pod = one_gpu_pod("2");
  pod["metadata"]["annotations"] = nullptr;
  Outcome r = run(pod);
  ASSERT_TRUE(r.patched["metadata"]["annotations"].is_object()) << r.patched.dump();
  EXPECT_TRUE(r.patched["metadata"]["annotations"].contains(kSizedKey));
}

TEST(DecidePodMutate, StorageOfAProfileWithoutATableIsNotIgnored) {
  // BUG (found by this test; src fixed since by rejecting it): a profile
  // without a table could set `storage`; the parser accepted it but
  // required_resources returns nullopt without a table, so the storage was
  // silently never requested. Either the parser rejects it or the pod gets it.
  auto parsed = parse_policy(
      "profiles:\n  train: {maxGpus: 8}\n  infer: {maxGpus: 1}\n"
      "  render: {maxGpus: 1, storage: 100Gi}\n  augment: {maxGpus: 1}\n",
      "test");
  if (!parsed.ok()) {
    EXPECT_TRUE(contains(parsed.error(), "profiles.render.storage")) << parsed.error();
    return;
  }
  const json pod = pod_of(json::array({gpu_container("r", "1", "4", "16Gi")}), {{"osmo.group_name", "render"}});
  Outcome r = run(pod, Endpoint::kMutate, Mode::kMutate, parsed.value());
  EXPECT_EQ(r.decision.profile, "render");
  EXPECT_EQ(resources_of(r.patched)["requests"].value("ephemeral-storage", ""), "100Gi") << r.ops.dump();
}

TEST(DecidePodMutate, SizedAnnotationAddedWithoutAnAnnotationsMap) {
  const json pod = one_gpu_pod("4");
  ASSERT_FALSE(pod["metadata"].contains("annotations"));
  Outcome r = run(pod);
  json annotations = r.patched["metadata"]["annotations"];
  ASSERT_TRUE(annotations.contains(kSizedKey)) << r.patched.dump();
  const std::string sized = annotations[kSizedKey];
  EXPECT_EQ(sized.rfind("train profile, 4 GPUs: trainer: ", 0), 0u) << sized;
  EXPECT_EQ(r.patched["metadata"]["name"], "train-x");
}

struct Idempotence {
  std::string what;
  json pod;
};
std::ostream& operator<<(std::ostream& os, const Idempotence& c) { return os << c.what; }

class IdempotenceTest : public ::testing::TestWithParam<Idempotence> {};

TEST_P(IdempotenceTest, DecidingThePatchedPodAgainChangesNothing) {
  Outcome first = run(GetParam().pod);
  ASSERT_FALSE(first.ops.empty());
  Outcome second = run(first.patched);
  EXPECT_TRUE(second.ops.empty()) << second.ops.dump();
  EXPECT_TRUE(second.decision.warnings.empty()) << all(second.decision.warnings);
  EXPECT_TRUE(second.decision.changes.empty()) << all(second.decision.changes);
  Outcome checked = validate(first.patched);
  EXPECT_TRUE(checked.decision.denials.empty()) << all(checked.decision.denials);
  EXPECT_TRUE(checked.decision.warnings.empty()) << all(checked.decision.warnings);
}

json limits_only_pod() {
  return pod_of(json::array(
      {{{"name", "trainer"}, {"resources", {{"limits", {{"nvidia.com/gpu", 8}, {"cpu", 8}, {"memory", "64Gi"}}}}}}}));
}

json split_pod_with_init() {
  json pod = pod_of(json::array({gpu_container("a", "1", "1", "1Gi"), gpu_container("b", "2", "1", "1Gi"), sidecar()}));
  json side = gpu_container("s", "1", "1", "1Gi");
  side["restartPolicy"] = "Always";
  pod["spec"]["initContainers"] = json::array({sidecar("osmo-init"), side});
  return pod;
}

INSTANTIATE_TEST_SUITE_P(Pods, IdempotenceTest,
                         ::testing::Values(Idempotence{"one_gpu", one_gpu_pod("1")},
                                           Idempotence{"sixteen_gpus", one_gpu_pod("16")},
                                           Idempotence{"limits_only_numeric", limits_only_pod()},
                                           Idempotence{"split_with_sidecars", split_pod_with_init()}),
                         [](const auto& info) { return info.param.what; });

TEST(DecidePodMutate, OptOutAnnotationMeansNoPatch) {
  const json pod =
      pod_of(json::array({gpu_container("trainer", "4", "1", "1Gi")}), nullptr, {{kMutateOptOutKey, "false"}});
  Outcome r = run(pod);
  EXPECT_TRUE(r.ops.empty()) << r.ops.dump();
  EXPECT_EQ(r.decision.gpus, 4);
  // Any other value is not an opt-out.
  Outcome r2 =
      run(pod_of(json::array({gpu_container("trainer", "4", "1", "1Gi")}), nullptr, {{kMutateOptOutKey, "true"}}));
  EXPECT_FALSE(r2.ops.empty());
}

TEST(DecidePodMutate, EnforceAndAuditModesNeverPatch) {
  for (Mode mode : {Mode::kEnforce, Mode::kAudit}) {
    Outcome r = run(one_gpu_pod("4"), Endpoint::kMutate, mode);
    EXPECT_TRUE(r.ops.empty()) << to_string(mode) << ": " << r.ops.dump();
    EXPECT_TRUE(r.decision.denials.empty()) << to_string(mode);
  }
}

TEST(DecidePodMutate, MutateEndpointNeverDenies) {
  Outcome r = run(one_gpu_pod("0.5"));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(r.ops.empty()) << r.ops.dump();
}

TEST(DecidePodMutate, TemplatePathPrefixesEveryOperation) {
  // A pod template inside a Job: operations address the whole object.
  const json job = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", {{"name", "j"}}},
      {"spec", {{"template", {{"spec", {{"containers", json::array({gpu_container("t", "2", "1", "1Gi")})}}}}}}}};
  JsonReader reader;
  const JsonView view = reader.view_of(job);
  PatchBuilder patch(view);
  const PodTarget target{{view["spec"]["template"], PodShape::kPod, {"spec", "template"}},
                         {"job default/j", Mode::kMutate},
                         view["metadata"]};
  const PodDecision d = decide_pod(default_policy(), Endpoint::kMutate, target, patch);
  EXPECT_EQ(d.gpus, 2);
  for (const auto& op : patch.operations())
    EXPECT_EQ(op["path"].get<std::string>().rfind("/spec/template/", 0), 0u) << op;
  json patched = apply_ops(job, patch.operations());
  json tpl = patched["spec"]["template"];
  EXPECT_EQ(tpl["spec"]["containers"][0]["resources"]["requests"]["memory"], "96Gi");
  EXPECT_TRUE(tpl["metadata"]["annotations"].contains(kSizedKey)) << tpl.dump();
  EXPECT_FALSE(patched["metadata"].contains("annotations"));
}

TEST(DecidePodMutate, EveryInitContainerWithMoreGpusThanTheAppIsSizedOnItsOwnCount) {
  // Init containers run alone, one after another: B's two ranks need the
  // 2-GPU row even though A, not B, is the largest.
  json pod = pod_of(json::array({gpu_container("trainer", "1", "16", "64Gi")}));
  pod["spec"]["initContainers"] =
      json::array({gpu_container("a", "4", "32", "192Gi"), gpu_container("b", "2", "16", "64Gi")});
  const Outcome r = run(pod);
  EXPECT_EQ(r.decision.gpus, 4);
  EXPECT_EQ(r.patched["spec"]["initContainers"][1]["resources"]["requests"]["memory"], "96Gi") << r.ops.dump();
  EXPECT_EQ(r.patched["spec"]["initContainers"][0]["resources"]["requests"]["memory"], "192Gi");
  EXPECT_EQ(r.patched["spec"]["containers"][0]["resources"]["requests"]["memory"], "64Gi");
}

}  // namespace
}  // namespace gpusizer::pod_decision_test
