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

namespace gpusizer {
namespace {

using nlohmann::json;

const char* const kDescription = "pod default/train-x";

// Its implicit members are noexcept (nlohmann::json's move and destructor
// are); clang-tidy 14 follows json's internals to a throw they cannot reach.
struct Outcome {  // NOLINT(bugprone-exception-escape)
  PodDecision decision;
  json ops;
  json patched;  // the pod with ops applied
};

json apply_ops(const json& doc, const json& ops) {
  try {
    return doc.patch(ops);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "patch does not apply: " << e.what() << "\nops: " << ops.dump(1) << "\ndoc: " << doc.dump(1);
    return doc;
  }
}

// quantity_from_json on a value written as nlohmann JSON.
Result<Quantity> quantity_of(const json& value) {
  JsonReader reader;
  return quantity_from_json(reader.view_of(value));
}

Outcome run(const json& pod, Endpoint endpoint = Endpoint::kMutate, Mode mode = Mode::kMutate,
            const Policy& policy = default_policy()) {
  JsonReader reader;
  const JsonView view = reader.view_of(pod);
  PatchBuilder patch(view);
  const PodTarget target{{view}, kDescription, mode};
  PodDecision decision = decide_pod(policy, endpoint, target, patch);
  const json ops = patch.operations();
  return Outcome{std::move(decision), ops, apply_ops(pod, ops)};
}

Outcome validate(const json& pod, Mode mode = Mode::kMutate, const Policy& policy = default_policy()) {
  return run(pod, Endpoint::kValidate, mode, policy);
}

Policy policy_from(const std::string& yaml) {
  auto parsed = parse_policy(yaml, "test");
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error());
  return parsed.ok() ? parsed.value() : default_policy();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A container asking for `gpus` GPUs with equal requests and limits.
json gpu_container(const std::string& name, json gpus, json cpu, json memory,
                   const std::string& gpu_resource = "nvidia.com/gpu") {
  json r = {{gpu_resource, gpus}, {"cpu", cpu}, {"memory", memory}};
  return {{"name", name}, {"image", "pytorch"}, {"resources", {{"requests", r}, {"limits", r}}}};
}

json sidecar(const std::string& name = "osmo-ctrl") {
  return {{"name", name},
          {"resources",
           {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}, {"limits", {{"cpu", "500m"}, {"memory", "512Mi"}}}}}};
}

// A pod of these containers. Those with GPUs mount a 32Gi memory-backed
// /dev/shm, as a training pod should (tests of the /dev/shm rule remove it).
json pod_of(json containers, json labels = nullptr, json annotations = nullptr) {
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

json one_gpu_pod(json gpus, json cpu = "1", json memory = "1Gi") {
  return pod_of(json::array({gpu_container("trainer", std::move(gpus), std::move(cpu), std::move(memory))}));
}

// A copy, so reading a key the patch failed to add fails the test instead of
// tripping nlohmann's assertion on const operator[].
json resources_of(const json& pod, std::size_t i = 0, const std::string& list = "containers") {
  return pod.value(json::json_pointer("/spec/" + list + "/" + std::to_string(i) + "/resources"), json());
}

// True when one line holds every part (wording around the numbers may vary).
bool has_line(const std::vector<std::string>& lines, const std::vector<std::string>& parts) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
    return std::all_of(parts.begin(), parts.end(), [&](const std::string& part) { return contains(line, part); });
  });
}

std::string all(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += "  [" + line + "]\n";
  return out;
}

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
                         "job default/j",
                         Mode::kMutate,
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

// ---------------------------------------------------------------------------
// Validate.

TEST(DecidePodValidate, UndersizedMemoryWithFourGpusIsDeniedWithTheFix) {
  const json pod = one_gpu_pod("4", "8", "64Gi");
  Outcome r = validate(pod);
  EXPECT_TRUE(r.ops.empty()) << r.ops.dump();
  ASSERT_EQ(r.decision.denials.size(), 1u) << all(r.decision.denials);
  const std::string& d = r.decision.denials[0];
  for (const char* part : {"pod default/train-x", "container \"trainer\"", "4 GPUs", "memory >= 192Gi", "64Gi",
                           "--set train_gpu=4 train_cpu=32 train_memory=192Gi", "train profile"}) {
    EXPECT_TRUE(contains(d, part)) << "missing \"" << part << "\" in: " << d;
  }
  EXPECT_EQ(d.rfind(kDescription, 0), 0u) << d;
}

TEST(DecidePodValidate, EnforceModeDeniesTheSame) {
  Outcome r = validate(one_gpu_pod("2", "16", "64Gi"), Mode::kEnforce);
  ASSERT_EQ(r.decision.denials.size(), 1u) << all(r.decision.denials);
  EXPECT_TRUE(contains(r.decision.denials[0], "--set train_gpu=2 train_cpu=16 train_memory=96Gi"))
      << r.decision.denials[0];
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
      pod_of(json::array({gpu_container("rank-a", "2", "16", "96Gi"), gpu_container("rank-b", "2", "16", "64Gi")}));
  Outcome r = validate(pod);
  ASSERT_EQ(r.decision.denials.size(), 1u) << all(r.decision.denials);
  const std::string& d = r.decision.denials[0];
  EXPECT_TRUE(contains(d, "container \"rank-b\"")) << d;
  EXPECT_TRUE(contains(d, "2 of 4 GPUs")) << d;
  EXPECT_TRUE(contains(d, "memory >= 96Gi")) << d;
  EXPECT_TRUE(contains(d, "train_gpu=4 train_cpu=32 train_memory=192Gi")) << d;
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
  EXPECT_TRUE(contains(d, "render_gpu=1")) << d;
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
  EXPECT_TRUE(contains(r.decision.denials[0], "augment_gpu=1")) << r.decision.denials[0];
}

TEST(DecidePodValidate, UnknownProfileLabelIsDeniedAndNotPatched) {
  const json pod = pod_of(json::array({gpu_container("t", "4", "1", "1Gi")}), {{"gpu-sizer.io/profile", "trainn"}});
  Outcome v = validate(pod);
  ASSERT_EQ(v.decision.denials.size(), 1u) << all(v.decision.denials);
  EXPECT_TRUE(contains(v.decision.denials[0], "trainn")) << v.decision.denials[0];
  EXPECT_TRUE(contains(v.decision.denials[0], "augment, infer, render, train")) << v.decision.denials[0];
  EXPECT_TRUE(run(pod).ops.empty());
}

struct Malformed {
  std::string what;
  json pod;
  std::vector<std::string> contains;
};
std::ostream& operator<<(std::ostream& os, const Malformed& c) { return os << c.what; }

class MalformedTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedTest, DeniedNamingTheFieldAndNeverPatched) {
  const Malformed& c = GetParam();
  Outcome v = validate(c.pod);
  ASSERT_FALSE(v.decision.denials.empty()) << c.pod.dump();
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

json fractional_only() {
  // No whole GPU anywhere: the pod may still hold GPUs, so it is decided.
  return pod_of(json::array({gpu_container("t", "0.5", "1", "1Gi")}));
}

INSTANTIATE_TEST_SUITE_P(
    Pods, MalformedTest,
    ::testing::Values(
        Malformed{"fractional_gpu",
                  fractional_only(),
                  {"spec.containers[0].resources", "nvidia.com/gpu", "whole number", "500m"}},
        Malformed{"fractional_numeric_gpu",
                  pod_of(json::array({gpu_container("t", 1.5, "1", "1Gi")})),
                  {"spec.containers[0].resources", "nvidia.com/gpu", "whole number"}},
        Malformed{"gpu_request_differs_from_limit",
                  mismatched_gpus(),
                  {"spec.containers[0].resources", "nvidia.com/gpu", "differ"}},
        Malformed{"invalid_memory_quantity",
                  with_resource("limits", "memory", "1KB"),
                  {"spec.containers[0].resources.limits.memory", "1KB"}},
        Malformed{"negative_memory",
                  with_resource("requests", "memory", "-1Gi"),
                  {"spec.containers[0].resources.requests.memory", "negative"}},
        Malformed{"negative_numeric_cpu",
                  with_resource("requests", "cpu", -2),
                  {"spec.containers[0].resources.requests.cpu", "negative"}},
        Malformed{"boolean_quantity",
                  with_resource("limits", "ephemeral-storage", true),
                  {"spec.containers[0].resources.limits.ephemeral-storage"}},
        Malformed{"invalid_gpu_quantity",
                  with_resource("limits", "nvidia.com/gpu", "two",
                                pod_of(json::array({{{"name", "t"}, {"resources", {{"limits", json::object()}}}}}))),
                  {"spec.containers[0].resources.limits.nvidia.com/gpu", "two"}},
        Malformed{"second_container_bad_quantity",
                  bad_second_container(),
                  {"spec.containers[1].resources.limits.memory", "96gi"}},
        // BUG (found by tests/fuzz/review_fuzz): these were patched with an
        // `add` under a list or a string, which no API server applies.
        Malformed{"metadata_not_an_object", with_metadata(json::array({"x"})), {"metadata is not an object"}},
        Malformed{"annotations_not_an_object",
                  with_metadata({{"name", "train-x"}, {"annotations", json::array({"x"})}}),
                  {"metadata.annotations is not an object"}},
        Malformed{"annotations_a_string",
                  with_metadata({{"name", "train-x"}, {"annotations", "x"}}),
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
}  // namespace gpusizer

namespace gpusizer {
namespace {

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
}  // namespace gpusizer

// ---------------------------------------------------------------------------
// /dev/shm: training pods need a memory-backed emptyDir of >= 16Gi (mutate
// adds 32Gi); a sizeLimit above the 32Gi the table includes raises memory.

namespace gpusizer {
namespace {

json shm_volume(const std::string& name, json size_limit) {
  json empty_dir = {{"medium", "Memory"}};
  if (!size_limit.is_null()) empty_dir["sizeLimit"] = std::move(size_limit);
  return {{"name", name}, {"emptyDir", empty_dir}};
}

json shm_mount(const std::string& volume) { return {{"name", volume}, {"mountPath", "/dev/shm"}}; }

// A sized 4-GPU training pod with a sidecar; with a dshm volume of
// size_limit mounted in the trainer unless size_limit is absent.
json training_pod(const json& size_limit = json(json::value_t::discarded), int64_t gpus = 4) {
  const Requirement need = *required_resources(*default_policy().find_profile("train"), gpus);
  json pod = pod_of(json::array(
      {gpu_container("trainer", std::to_string(gpus), need.cpu.to_string(), need.memory.to_string()), sidecar()}));
  pod["spec"]["containers"][0]["resources"]["limits"]["ephemeral-storage"] = "300Gi";
  if (size_limit.is_discarded()) {
    pod["spec"].erase("volumes");
    pod["spec"]["containers"][0].erase("volumeMounts");
  } else {
    pod["spec"]["volumes"] = json::array({shm_volume("dshm", size_limit)});
  }
  return pod;
}

TEST(ShmRule, TrainingPodWithoutShmGets32GiMemoryBackedEmptyDir) {
  const Outcome r = run(training_pod());
  EXPECT_EQ(r.patched["spec"]["volumes"], json::array({shm_volume("gpu-sizer-shm", "32Gi")})) << r.ops.dump();
  EXPECT_EQ(r.patched["spec"]["containers"][0]["volumeMounts"], json::array({shm_mount("gpu-sizer-shm")}));
  EXPECT_FALSE(r.patched["spec"]["containers"][1].contains("volumeMounts")) << "the sidecar holds no GPU";
  EXPECT_EQ(r.patched["spec"]["containers"][0]["resources"]["limits"]["memory"], "192Gi");
  EXPECT_TRUE(
      has_line(r.decision.warnings,
               {"/dev/shm: added 32Gi memory-backed emptyDir \"gpu-sizer-shm\" to \"trainer\" (train profile)"}))
      << all(r.decision.warnings);
  EXPECT_TRUE(contains(r.patched["metadata"]["annotations"]["gpu-sizer.io/sized"], "/dev/shm: added 32Gi (trainer)"));
  ASSERT_EQ(r.decision.raised.size(), 1u);
  EXPECT_EQ(r.decision.raised[0].resource, "shm");
}

TEST(ShmRule, ExistingArraysGetTheVolumeAndMountAppended) {
  json pod = training_pod();
  pod["spec"]["volumes"] = json::array({{{"name", "data"}, {"emptyDir", json::object()}}});
  pod["spec"]["containers"][0]["volumeMounts"] = json::array({{{"name", "data"}, {"mountPath", "/data"}}});
  const Outcome r = run(pod);
  EXPECT_TRUE(
      has_line({r.ops.dump()}, {R"("path":"/spec/volumes/-")", R"("path":"/spec/containers/0/volumeMounts/-")"}))
      << r.ops.dump();
  EXPECT_EQ(r.patched["spec"]["volumes"][1], shm_volume("gpu-sizer-shm", "32Gi"));
  EXPECT_EQ(r.patched["spec"]["containers"][0]["volumeMounts"][1], shm_mount("gpu-sizer-shm"));
}

TEST(ShmRule, SizeLimitAtTheMinimumIsKept) {
  const Outcome r = run(training_pod("16Gi"));
  EXPECT_TRUE(r.ops.empty()) << r.ops.dump();
  EXPECT_TRUE(validate(training_pod("16Gi"), Mode::kEnforce).decision.denials.empty());
}

TEST(ShmRule, SizeLimitJustUnderTheMinimumIsEnlargedTo32Gi) {
  const Outcome r = run(training_pod("16383Mi"));
  EXPECT_EQ(r.patched["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "32Gi") << r.ops.dump();
  EXPECT_TRUE(has_line(r.decision.warnings, {"emptyDir \"dshm\" sizeLimit 16383Mi->32Gi", "below the 16Gi minimum"}))
      << all(r.decision.warnings);
  const Outcome denied = validate(training_pod("16383Mi"), Mode::kEnforce);
  ASSERT_EQ(denied.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kShm});
  EXPECT_TRUE(contains(denied.decision.denials[0], "set spec.volumes[0].emptyDir.sizeLimit to 32Gi"))
      << denied.decision.denials[0];
}

TEST(ShmRule, SizeLimitJustOverTheMinimumIsKept) { EXPECT_TRUE(run(training_pod("16385Mi")).ops.empty()); }

TEST(ShmRule, NoSizeLimitIsBoundedByThePodMemoryAndKept) { EXPECT_TRUE(run(training_pod(nullptr)).ops.empty()); }

TEST(ShmRule, InferencePodGetsNoShm) {
  json pod = training_pod();
  pod["metadata"]["labels"] = {{"gpu-sizer.io/profile", "infer"}};
  pod["spec"]["containers"][0]["resources"]["limits"]["ephemeral-storage"] = "200Gi";
  const Outcome r = run(pod);
  EXPECT_FALSE(r.patched["spec"].contains("volumes")) << r.ops.dump();
  EXPECT_TRUE(validate(pod, Mode::kEnforce).decision.denials.empty());
}

TEST(ShmRule, ExistingVolumeIsMountedWhereAGpuContainerLacksIt) {
  json pod = training_pod("32Gi", 2);
  pod["spec"]["containers"] = json::array({gpu_container("a", "1", "8", "48Gi"), gpu_container("b", "1", "8", "48Gi")});
  pod["spec"]["containers"][0]["volumeMounts"] = json::array({shm_mount("dshm")});
  const Outcome r = run(pod);
  EXPECT_EQ(r.patched["spec"]["volumes"].size(), 1u) << r.ops.dump();
  EXPECT_EQ(r.patched["spec"]["containers"][1]["volumeMounts"], json::array({shm_mount("dshm")}));
  EXPECT_TRUE(has_line(r.decision.warnings, {"/dev/shm: mounted emptyDir \"dshm\" in \"b\""}))
      << all(r.decision.warnings);
  const Outcome denied = validate(pod, Mode::kEnforce);
  EXPECT_TRUE(
      has_line(denied.decision.denials, {"/dev/shm is not mounted in container \"b\"", "mount volume \"dshm\""}))
      << all(denied.decision.denials);
}

TEST(ShmRule, DiskBackedShmIsWarnedAndLeft) {
  json pod = training_pod("32Gi");
  pod["spec"]["volumes"][0]["emptyDir"].erase("medium");
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod, Mode::kEnforce);
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"/dev/shm (volume \"dshm\") is not a memory-backed emptyDir"}))
      << all(r.decision.warnings);
}

TEST(ShmRule, TakenVolumeNameIsAProblem) {
  json pod = training_pod();
  pod["spec"]["volumes"] = json::array({{{"name", "gpu-sizer-shm"}, {"hostPath", {{"path", "/x"}}}}});
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kInvalid});
  EXPECT_TRUE(contains(r.decision.denials[0], "spec.volumes[0] is volume \"gpu-sizer-shm\"")) << r.decision.denials[0];
}

struct ShmFloor {
  const char* size_limit;
  const char* memory;  // what 2 GPUs then need
};

class ShmFloorTest : public ::testing::TestWithParam<ShmFloor> {};

TEST_P(ShmFloorTest, SizeLimitOverTheTablesShareRaisesMemory) {
  const Outcome r = run(training_pod(GetParam().size_limit, 2));
  EXPECT_EQ(r.patched["spec"]["containers"][0]["resources"]["limits"]["memory"], GetParam().memory) << r.ops.dump();
}

INSTANTIATE_TEST_SUITE_P(TableIncludes32Gi, ShmFloorTest,
                         ::testing::Values(ShmFloor{"31Gi", "96Gi"}, ShmFloor{"32Gi", "96Gi"}, ShmFloor{"33Gi", "97Gi"},
                                           ShmFloor{"64Gi", "128Gi"}));

TEST(ShmRule, MemoryRaisedForShmSaysWhy) {
  const Outcome r = run(training_pod("64Gi"));
  EXPECT_TRUE(has_line(r.decision.warnings, {"memory request 192Gi->224Gi", "train 192Gi + 32Gi /dev/shm"}))
      << all(r.decision.warnings);
  const Outcome denied = validate(training_pod("64Gi"), Mode::kEnforce);
  EXPECT_TRUE(has_line(denied.decision.denials, {"need memory >= 224Gi", "train_memory=224Gi"}))
      << all(denied.decision.denials);
}

TEST(ShmRule, EnforceDeniesAMissingShmAtOneGpu) {
  const Outcome r = validate(training_pod(json(json::value_t::discarded), 1), Mode::kEnforce);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kShm});
  EXPECT_TRUE(contains(r.decision.denials[0], "/dev/shm is not set in container \"trainer\"")) << r.decision.denials[0];
  EXPECT_TRUE(contains(r.decision.denials[0], "{name: gpu-sizer-shm, emptyDir: {medium: Memory, sizeLimit: 32Gi}}"))
      << r.decision.denials[0];
  EXPECT_TRUE(run(training_pod(json(json::value_t::discarded), 1), Endpoint::kMutate, Mode::kEnforce).ops.empty());
}

TEST(ShmRule, AuditSaysItWouldDeny) {
  const Outcome r = validate(training_pod(), Mode::kAudit);
  EXPECT_TRUE(r.decision.denials.empty());
  EXPECT_TRUE(has_line(r.decision.warnings, {"audit: would deny: /dev/shm unset in container \"trainer\""}))
      << all(r.decision.warnings);
}

TEST(ShmRule, OptedOutPodIsDeniedNamingTheAnnotation) {
  json pod = training_pod();
  pod["metadata"]["annotations"] = {{"gpu-sizer.io/mutate", "false"}};
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kShm});
  EXPECT_TRUE(contains(r.decision.denials[0], "remove annotation gpu-sizer.io/mutate=false")) << r.decision.denials[0];
}

TEST(ShmRule, PatchedPodIsStableOnASecondPass) {
  for (const json& pod : {training_pod(), training_pod("8Gi"), training_pod("64Gi")}) {
    const Outcome first = run(pod);
    const Outcome second = run(first.patched);
    EXPECT_TRUE(second.ops.empty()) << second.ops.dump();
    EXPECT_TRUE(validate(first.patched, Mode::kEnforce).decision.denials.empty());
  }
}

TEST(ShmRule, EachGpuContainersOwnShmIsCheckedAndCountsAgainstMemory) {
  json pod = training_pod("32Gi", 2);
  pod["spec"]["containers"] = json::array({gpu_container("a", "1", "8", "48Gi"), gpu_container("b", "1", "8", "48Gi")});
  pod["spec"]["containers"][0]["volumeMounts"] = json::array({shm_mount("dshm")});
  pod["spec"]["containers"][1]["volumeMounts"] = json::array({shm_mount("small")});
  pod["spec"]["volumes"].push_back(shm_volume("small", "1Gi"));
  const Outcome r = run(pod);
  EXPECT_EQ(r.patched["spec"]["volumes"][1]["emptyDir"]["sizeLimit"], "32Gi") << r.ops.dump();
  // Two 32Gi memory-backed volumes: 32Gi above the 32Gi the table holds.
  EXPECT_EQ(r.patched["spec"]["containers"][0]["resources"]["limits"]["memory"], "64Gi") << r.ops.dump();
  const Outcome denied = validate(pod, Mode::kEnforce);
  EXPECT_TRUE(has_line(denied.decision.denials, {"volume \"small\"", "set spec.volumes[1].emptyDir.sizeLimit to 32Gi"}))
      << all(denied.decision.denials);
  EXPECT_TRUE(run(r.patched).ops.empty());
}

TEST(ShmRule, NonListVolumeMountsAreAProblemNotOverwritten) {
  json pod = training_pod();
  pod["spec"]["containers"][0]["volumeMounts"] = json::object();
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  EXPECT_TRUE(has_line(r.decision.denials, {"spec.containers[0].volumeMounts is not a list"}))
      << all(r.decision.denials);
}

TEST(ShmRule, OptedOutPodInEnforceModeIsNotToldGpuSizerSetsIt) {
  json pod = training_pod();
  pod["metadata"]["annotations"] = {{"gpu-sizer.io/mutate", "false"}};
  const Outcome r = validate(pod, Mode::kEnforce);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kShm});
  EXPECT_FALSE(contains(r.decision.denials[0], "so gpu-sizer sets")) << r.decision.denials[0];
}

TEST(ShmRule, ArgoTemplatesUseWorkflowVolumesOrGetTheirOwn) {
  const json workflow = json::parse(R"({
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "wf", "namespace": "ml"},
    "spec": {"entrypoint": "a", "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
      "templates": [
        {"name": "a", "container": {"image": "x", "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
          "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "16", "memory": "64Gi", "ephemeral-storage": "300Gi"}}}},
        {"name": "b", "container": {"image": "x",
          "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "16", "memory": "64Gi", "ephemeral-storage": "300Gi"}}}}]}})");
  JsonReader reader;
  const JsonView view = reader.view_of(workflow);
  PatchBuilder patch(view);
  for (const PodTemplateRef& ref : find_pod_templates("argoproj.io", "Workflow", view)) {
    decide_pod(default_policy(), Endpoint::kMutate, PodTarget{ref, "workflow ml/wf", Mode::kMutate, view["metadata"]},
               patch);
  }
  const json patched = apply_ops(workflow, patch.operations());
  EXPECT_EQ(patched["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "32Gi") << patch.text();
  EXPECT_EQ(patched["spec"]["templates"][1]["volumes"], json::array({shm_volume("gpu-sizer-shm", "32Gi")}));
  EXPECT_EQ(patched["spec"]["templates"][1]["container"]["volumeMounts"], json::array({shm_mount("gpu-sizer-shm")}));
}

}  // namespace
}  // namespace gpusizer

// ---------------------------------------------------------------------------
// Beyond the table through decide_pod: the data-loader floor, GPU memory
// fit and node fit, as the webhook applies them.

namespace gpusizer {
namespace {

json annotated_pod(int64_t gpus, json annotations, json node_selector = nullptr) {
  json pod = pod_of(json::array({gpu_container("trainer", std::to_string(gpus), "1", "1Gi")}), nullptr,
                    std::move(annotations));
  if (!node_selector.is_null()) pod["spec"]["nodeSelector"] = std::move(node_selector);
  return pod;
}

// The pod as the mutating endpoint leaves it, for the validating checks.
json sized(const json& pod) { return run(pod).patched; }

const char* const kSevenBFull = "params=7B,context=4k,precision=bf16,method=full,zero=0,mode=train";

json rtx4090() { return {{"nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-4090"}}; }

struct LoaderFloor {
  const char* batch;
  const char* memory;  // what 1 GPU then gets
};

class DataLoaderFloorTest : public ::testing::TestWithParam<LoaderFloor> {};

// 1 GPU, 4 workers x 2 prefetch x batch x 1 MiB uint8 x 1.56 + 2Gi + 3Gi
// against the 64Gi table: 4800 lands on 64Gi, 4700 under, 4900 over.
TEST_P(DataLoaderFloorTest, TheLargerOfTableAndLoaderBinds) {
  const std::string annotation =
      std::string("workers=4,prefetch=2,batch=") + GetParam().batch + ",sample=1024x1024,dtype=uint8";
  const Outcome r = run(annotated_pod(1, {{"gpu-sizer.io/dataloader", annotation}}));
  EXPECT_EQ(resources_of(r.patched)["limits"]["memory"], GetParam().memory) << r.ops.dump();
}

INSTANTIATE_TEST_SUITE_P(OneGpu, DataLoaderFloorTest,
                         ::testing::Values(LoaderFloor{"4700", "64Gi"}, LoaderFloor{"4800", "64Gi"},
                                           LoaderFloor{"4900", "65Gi"}));

TEST(DataLoaderRule, SeedOomRowOnFourGpusNeeds241GiAndSaysWhy) {
  const json pod = annotated_pod(4, {{"gpu-sizer.io/dataloader", "workers=32,prefetch=8,batch=256,sample=3x224x224"}});
  const Outcome r = run(pod);
  EXPECT_EQ(resources_of(r.patched)["requests"]["memory"], "241Gi") << r.ops.dump();
  EXPECT_EQ(resources_of(r.patched)["requests"]["cpu"], "32") << "CPU stays the table's";
  EXPECT_TRUE(has_line(r.decision.warnings, {"memory request 1Gi->241Gi", "(4 GPUs, data loader)"}))
      << all(r.decision.warnings);
  EXPECT_TRUE(has_line(r.decision.warnings,
                       {"data loader memory floor 241Gi = 4x(32x8x147Mi x1.56+2Gi)+3Gi (gpu-sizer.io/dataloader)"}))
      << all(r.decision.warnings);
  for (const auto& warning : r.decision.warnings) EXPECT_LT(warning.size(), 120u) << warning;
  const Outcome denied = validate(pod, Mode::kEnforce);
  EXPECT_TRUE(has_line(denied.decision.denials,
                       {"need memory >= 241Gi (data loader: 4 x (32 workers x 8 prefetch x 147Mi batch x 1.56 + 2Gi) + "
                        "3Gi; train table 192Gi)",
                        "train_memory=241Gi"}))
      << all(denied.decision.denials);
}

TEST(DataLoaderRule, AFloorNoNodeHasIsDeniedNotPatched) {
  const json pod =
      annotated_pod(4, {{"gpu-sizer.io/dataloader", "workers=32,prefetch=8,batch=256,sample=3x224x224000"}});
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  ASSERT_FALSE(r.decision.denials.empty());
  EXPECT_TRUE(contains(r.decision.denials[0], "more than any node has; check its values")) << r.decision.denials[0];
}

TEST(DataLoaderRule, ProfileWithoutATableGetsTheLoaderFloorOnly) {
  json pod = annotated_pod(1, {{"gpu-sizer.io/dataloader", "workers=12,prefetch=3,batch=256,sample=3x224x224"}});
  pod["metadata"]["labels"] = {{"gpu-sizer.io/profile", "render"}};
  const Outcome r = run(pod);
  EXPECT_EQ(resources_of(r.patched)["requests"]["memory"], "14Gi") << r.ops.dump();
  EXPECT_EQ(resources_of(r.patched)["requests"]["cpu"], "1") << "a profile without a table sizes no CPU";
}

TEST(DataLoaderRule, MalformedAnnotationStopsThePatchAndIsDenied) {
  const json pod = annotated_pod(4, {{"gpu-sizer.io/dataloader", "workers=twelve,batch=256,sample=3x224x224"}});
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  ASSERT_FALSE(r.decision.denial_reasons.empty());
  EXPECT_EQ(r.decision.denial_reasons[0], DenialReason::kInvalid);
  EXPECT_TRUE(contains(r.decision.denials[0], "annotation gpu-sizer.io/dataloader part \"workers=twelve\""))
      << r.decision.denials[0];
}

TEST(VramFit, SevenBFullFineTuneOnTwo24GBGpusIsDeniedWithTheOptionsThatFit) {
  const json pod = annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}}, rtx4090());
  const Outcome mutated = run(pod);
  EXPECT_FALSE(contains(mutated.ops.dump(), "model")) << "no patch fixes a model that does not fit";
  const Outcome r = validate(mutated.patched);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
  for (const char* part : {"pod default/train-x: model params=7B method=full zero=0 needs 280.0 GB per GPU",
                           "more than the 24 GB of RTX-4090",
                           "Would fit:", "method=qlora,zero=3 on 2 x 80 GB GPUs (A100-80GB, H100-80GB): 46.7 GB/GPU",
                           "zero=3 on 7 x 80 GB GPUs: 66.7 GB/GPU"}) {
    EXPECT_TRUE(contains(r.decision.denials[0], part)) << part << "\n" << r.decision.denials[0];
  }
}

TEST(VramFit, WithinTheSafetyMarginIsAllowedWithAWarning) {
  const Outcome r = validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", "params=2B,method=qlora"}}, rtx4090())));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"model 2B qlora: 22.3 GB/GPU", "20.4 GB usable"}))
      << all(r.decision.warnings);
}

TEST(VramFit, WarnActionNeverDenies) {
  const Policy policy = policy_from("gpuMemory:\n  action: warn\n");
  const Outcome r =
      validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}}, rtx4090())), Mode::kMutate, policy);
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"280.0 GB"})) << all(r.decision.warnings);
}

TEST(VramFit, AuditSaysItWouldDeny) {
  const Outcome r = validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}}, rtx4090())), Mode::kAudit);
  EXPECT_TRUE(r.decision.denials.empty());
  EXPECT_TRUE(has_line(r.decision.warnings, {"audit: would deny:", "280.0 GB"})) << all(r.decision.warnings);
}

TEST(GpuModel, NodeSelectorWinsOverTheAnnotationWhichServesWithoutOne) {
  // The scheduler enforces the nodeSelector: the annotation cannot talk a
  // 24 GB pod into an 80 GB verdict.
  const json annotations = {{"gpu-sizer.io/model", "params=7B,method=lora,zero=3"}, {"gpu-sizer.io/gpu", "H100-80GB"}};
  const Outcome pinned = validate(sized(annotated_pod(2, annotations, rtx4090())));
  ASSERT_EQ(pinned.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
  EXPECT_TRUE(contains(pinned.decision.denials[0], "24 GB of RTX-4090 (nodeSelector")) << pinned.decision.denials[0];
  const Outcome annotated = validate(sized(annotated_pod(2, annotations)));
  EXPECT_TRUE(annotated.decision.denials.empty()) << all(annotated.decision.denials);
  EXPECT_TRUE(annotated.decision.warnings.empty()) << all(annotated.decision.warnings);
}

TEST(GpuModel, AnUnknownAllowedModelTurnsTheDenialIntoAWarning) {
  json pod = annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}});
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
      json::parse(R"([{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                       "values": ["NVIDIA-A10G", "NVIDIA-H200", "NVIDIA-A10G"]}]}])");
  const Outcome r = validate(sized(pod));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"280.0 GB"})) << all(r.decision.warnings);
}

TEST(VramFit, ZeroDenialTellsAJobSpanningPodsToSetRanks) {
  const Outcome r = validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", "params=7B,zero=3"}}, rtx4090())));
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
  EXPECT_TRUE(
      contains(r.decision.denials[0], "If the job spans several pods, set ranks=<total GPUs> in gpu-sizer.io/model"))
      << r.decision.denials[0];
}

TEST(GpuModel, FromRequiredAffinityDeniesOnlyWhenNoCandidateFits) {
  json pod = annotated_pod(2, {{"gpu-sizer.io/model", "params=7B,method=qlora,zero=3"}});
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
      json::parse(R"([{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                       "values": ["NVIDIA-GeForce-RTX-4090", "NVIDIA-A100-SXM4-80GB"]}]}])");
  const Outcome some_fit = validate(sized(pod));
  EXPECT_TRUE(some_fit.decision.denials.empty()) << all(some_fit.decision.denials);
  EXPECT_TRUE(has_line(some_fit.decision.warnings, {"46.7 GB/GPU"})) << all(some_fit.decision.warnings);
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
     ["matchExpressions"][0]["values"] = {"NVIDIA-GeForce-RTX-4090"};
  EXPECT_EQ(validate(sized(pod)).decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
}

TEST(GpuModel, UnknownOrMissingModelWarnsOnce) {
  const Outcome none = validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}})));
  EXPECT_TRUE(none.decision.denials.empty());
  EXPECT_TRUE(
      has_line(none.decision.warnings, {"model not checked: GPU model unknown", "nodeSelector nvidia.com/gpu.product"}))
      << all(none.decision.warnings);
  const Outcome mig = validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}},
                                                   {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}})));
  EXPECT_TRUE(mig.decision.denials.empty());
  EXPECT_TRUE(has_line(mig.decision.warnings, {"model not checked: GPU", "is not in gpuMemory.gpus"}))
      << all(mig.decision.warnings);
}

TEST(ModelAnnotation, MalformedIsDeniedNamingThePartButDoesNotStopThePatch) {
  const json pod = annotated_pod(2, {{"gpu-sizer.io/model", "params=7B,zero=4"}}, rtx4090());
  EXPECT_FALSE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  ASSERT_FALSE(r.decision.denial_reasons.empty());
  EXPECT_TRUE(has_line(r.decision.denials, {"annotation gpu-sizer.io/model part \"zero=4\": must be 0, 1, 2 or 3"}))
      << all(r.decision.denials);
}

// One pool of 8-GPU nodes holding exactly what the 8-GPU train row asks.
Policy node_pool_policy(const std::string& action) {
  return policy_from("nodeFit:\n  action: " + action +
                     "\n  pools:\n    - name: a100\n      gpuProduct: NVIDIA-A100-SXM4-80GB\n"
                     "      nodes: [{name: dgx-a100, gpus: 8, cpu: \"64\", memory: 384Gi, ephemeralStorage: 300Gi}]\n");
}

TEST(NodeFit, SizedPodEqualToTheLargestNodeFits) {
  const Outcome r = validate(run(annotated_pod(8, nullptr)).patched, Mode::kMutate, node_pool_policy("deny"));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(r.decision.warnings.empty()) << all(r.decision.warnings);
}

TEST(NodeFit, SidecarsCountWithTheAppContainers) {
  json pod = run(annotated_pod(8, nullptr)).patched;
  pod["spec"]["containers"].push_back(sidecar());
  const Outcome r = validate(pod, Mode::kMutate, node_pool_policy("deny"));
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kNodeFit});
  EXPECT_TRUE(contains(r.decision.denials[0], "dgx-a100")) << r.decision.denials[0];
}

TEST(NodeFit, MoreGpusThanAnyNodeWarnsByDefaultAction) {
  const Outcome r = validate(run(annotated_pod(16, nullptr)).patched, Mode::kMutate, node_pool_policy("warn"));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"node fit: 16 GPUs", "largest \"dgx-a100\" has 8 GPUs"}))
      << all(r.decision.warnings);
}

TEST(NodeFit, EnforceModeJudgesThePodAsSizedNotAsWritten) {
  // Written at 64Gi the pod would fit a 256Gi node; sized (384Gi) it fits none.
  const Policy policy = policy_from(
      "mode: enforce\nnodeFit:\n  action: warn\n  pools:\n    - name: small\n"
      "      nodes: [{name: n, gpus: 8, cpu: \"64\", memory: 256Gi, ephemeralStorage: 1Ti}]\n");
  const Outcome r = validate(annotated_pod(8, nullptr), Mode::kEnforce, policy);
  EXPECT_TRUE(has_line(r.decision.warnings, {"node fit: 8 GPUs, cpu 64, memory 384Gi"})) << all(r.decision.warnings);
}

TEST(AuditLines, NameTheTemplateOfAWorkload) {
  const json workflow = json::parse(R"({
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "wf", "namespace": "ml"},
    "spec": {"entrypoint": "a", "templates": [{"name": "finetune", "container": {"image": "x",
      "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "16", "memory": "64Gi", "ephemeral-storage": "300Gi"}}}}]}})");
  JsonReader reader;
  const JsonView view = reader.view_of(workflow);
  PatchBuilder patch(view);
  const auto refs = find_pod_templates("argoproj.io", "Workflow", view);
  ASSERT_EQ(refs.size(), 1u);
  const PodDecision d =
      decide_pod(default_policy(), Endpoint::kValidate,
                 PodTarget{refs[0], "Workflow ml/wf", Mode::kAudit, view["metadata"], "template \"finetune\" "}, patch);
  EXPECT_TRUE(has_line(d.warnings, {"audit: would deny: template \"finetune\" /dev/shm unset"})) << all(d.warnings);
}

TEST(NodeFit, PoolGpuProductIsTheLastSourceOfTheGpuModel) {
  json pod = annotated_pod(2, {{"gpu-sizer.io/model", "params=7B,method=full,zero=3"}});
  pod["metadata"]["labels"] = {{"osmo.pool", "a100"}};
  const Outcome r = validate(sized(pod), Mode::kMutate, node_pool_policy("warn"));
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
  EXPECT_TRUE(contains(r.decision.denials[0], "A100-80GB (node pool \"a100\"")) << r.decision.denials[0];
}

TEST(Explain, RulesNameEveryFloorAndTheBindingOne) {
  json pod = annotated_pod(4, {{"gpu-sizer.io/dataloader", "workers=32,prefetch=8,batch=256,sample=3x224x224"}});
  pod["spec"].erase("volumes");
  pod["spec"]["containers"][0].erase("volumeMounts");
  JsonReader reader;
  const JsonView view = reader.view_of(pod);
  PatchBuilder patch(view);
  PodTarget target{{view}, kDescription, Mode::kMutate};
  target.explain = true;
  const PodDecision decision = decide_pod(default_policy(), Endpoint::kMutate, target, patch);
  std::vector<std::string> rows;
  for (const auto& row : explain_rows(decision.explanation, decision.explanation)) {
    rows.push_back(row.title + " | " + row.floor + " | " + row.detail);
  }
  EXPECT_TRUE(has_line(rows, {"table | cpu 32, memory 192Gi, ephemeral-storage 300Gi | train row for 4 GPUs"}))
      << all(rows);
  EXPECT_TRUE(has_line(rows, {"/dev/shm | /dev/shm 32Gi | none found: gpu-sizer sets 32Gi"})) << all(rows);
  EXPECT_TRUE(has_line(rows, {"data loader | memory 241Gi | 4 x (32 workers x 8 prefetch"})) << all(rows);
  EXPECT_TRUE(has_line(rows, {"binding | memory 241Gi | data loader: 4 x (32 workers"})) << all(rows);
  EXPECT_TRUE(
      has_line(rows, {"container \"trainer\" | cpu 32, memory 241Gi, ephemeral-storage 300Gi | requests it runs with"}))
      << all(rows);
  EXPECT_TRUE(has_line(rows, {"GPU memory | - | no annotation gpu-sizer.io/model"})) << all(rows);
  EXPECT_TRUE(has_line(rows, {"node fit | - | no node pools"})) << all(rows);
  target.explain = false;
  PatchBuilder quiet(view);
  EXPECT_TRUE(decide_pod(default_policy(), Endpoint::kMutate, target, quiet).explanation.rules.empty());
}

}  // namespace
}  // namespace gpusizer
