// The real binary over TLS: AdmissionReviews in, patches applied as the API
// server applies them, and the resulting pods checked.
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "integration/shared_webhook.h"
#include "integration/volume_files.h"
#include "integration/webhook_process.h"
#include "support/review_support.h"

namespace gpusizer::testing::webhook_test {
namespace {

json container_resources(const json& pod, std::size_t index = 0) {
  return pod["spec"]["containers"][index]["resources"];
}

std::vector<std::string> warnings_of(const json& answer) {
  return answer["response"].value("warnings", std::vector<std::string>{});
}

class WebhookTest : public SharedWebhookTest {};

struct GpuCase {
  int gpus;
  std::string cpu;
  std::string memory;
};
void PrintTo(const GpuCase& c, std::ostream* out) { *out << c.gpus << " GPUs -> " << c.cpu << " CPU / " << c.memory; }

class TrainingPodSizes : public WebhookTest, public ::testing::WithParamInterface<GpuCase> {};

TEST_P(TrainingPodSizes, MutateRaisesToTheTableAndTheResultIsStable) {
  const GpuCase& c = GetParam();
  const json pod = gpu_pod("train-x", {{"requests", {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", c.gpus}}},
                                       {"limits", {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", c.gpus}}}});
  const json answer = webhook_->review("/mutate", admission_review(pod));
  ASSERT_TRUE(answer["response"]["allowed"].get<bool>());
  const json patched = apply_response(pod, answer);
  const json resources = container_resources(patched);
  EXPECT_EQ(resources["requests"]["cpu"], c.cpu);
  EXPECT_EQ(resources["requests"]["memory"], c.memory);
  EXPECT_EQ(resources["limits"]["memory"], c.memory);
  EXPECT_EQ(resources["requests"]["ephemeral-storage"], "300Gi");
  EXPECT_EQ(resources["limits"]["nvidia.com/gpu"], c.gpus) << "GPU counts are never touched";
  EXPECT_TRUE(patched["metadata"]["annotations"].contains("gpu-sizer.io/sized"));

  // A second pass (reinvocation) changes nothing and the validator admits it.
  const json again = webhook_->review("/mutate", admission_review(patched));
  EXPECT_FALSE(again["response"].contains("patch"));
  const json validated = webhook_->review("/validate", admission_review(patched));
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>());
  EXPECT_FALSE(validated["response"].contains("patch"));
}

INSTANTIATE_TEST_SUITE_P(SeedTable, TrainingPodSizes,
                         ::testing::Values(GpuCase{1, "16", "64Gi"}, GpuCase{2, "16", "96Gi"},
                                           GpuCase{3, "24", "144Gi"}, GpuCase{4, "32", "192Gi"},
                                           GpuCase{8, "64", "384Gi"}, GpuCase{16, "128", "768Gi"}),
                         [](const auto& info) { return std::to_string(info.param.gpus) + "Gpus"; });

TEST_F(WebhookTest, FourGpuPodAt64GiIsPatchedWithWarnings) {
  const json pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});
  const json answer = webhook_->review("/mutate", admission_review(pod));
  const json resources = container_resources(apply_response(pod, answer));
  EXPECT_EQ(resources["requests"]["cpu"], "32");
  EXPECT_EQ(resources["requests"]["memory"], "192Gi");
  EXPECT_EQ(resources["limits"]["memory"], "192Gi");
  EXPECT_EQ(resources["requests"]["ephemeral-storage"], "300Gi");
  const auto warnings = warnings_of(answer);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_NE(warnings[1].find("64Gi->192Gi"), std::string::npos) << warnings[1];
  for (const auto& w : warnings) EXPECT_LT(w.size(), 120u) << w;
}

TEST_F(WebhookTest, OptedOutPodIsLeftAloneByMutateAndDeniedByValidateWithTheFix) {
  const json pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"cpu", "8"}, {"nvidia.com/gpu", "4"}}}},
                           {{"gpu-sizer.io/mutate", "false"}});
  const json mutated = webhook_->review("/mutate", admission_review(pod));
  EXPECT_FALSE(mutated["response"].contains("patch"));
  EXPECT_TRUE(mutated["response"]["allowed"].get<bool>());

  const json validated = webhook_->review("/validate", admission_review(pod));
  const json& response = validated["response"];
  EXPECT_FALSE(response["allowed"].get<bool>());
  EXPECT_EQ(response["status"]["code"], 403);
  const std::string message = response["status"]["message"];
  for (const char* part : {"pod team-a/train-x", "container \"trainer\"", "4 GPUs", "192Gi", "64Gi",
                           "set memory to 192Gi and cpu to 32", "gpu-sizer.io/mutate"}) {
    EXPECT_NE(message.find(part), std::string::npos) << "missing \"" << part << "\" in: " << message;
  }
}

TEST_F(WebhookTest, LimitsOnlyGetRequestsAndRaisedLimits) {
  const json pod = gpu_pod("train-x", {{"limits", {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "2"}}}});
  const json resources = container_resources(apply_response(pod, webhook_->review("/mutate", admission_review(pod))));
  EXPECT_EQ(resources["requests"]["memory"], "96Gi");
  EXPECT_EQ(resources["limits"]["memory"], "96Gi");
  EXPECT_EQ(resources["requests"]["cpu"], "16");
  EXPECT_EQ(resources["limits"]["cpu"], "16");
}

TEST_F(WebhookTest, ValuesAboveTheTableAreKept) {
  const json pod = gpu_pod("train-x", {{"requests", {{"cpu", "48"}, {"memory", "256Gi"}, {"ephemeral-storage", "1Ti"}}},
                                       {"limits", {{"memory", "300Gi"}, {"nvidia.com/gpu", "4"}}}});
  const json answer = webhook_->review("/mutate", admission_review(pod));
  EXPECT_FALSE(answer["response"].contains("patch"));
  EXPECT_FALSE(answer["response"].contains("warnings"));
}

TEST_F(WebhookTest, OnlyTheUndersizedValueIsRaised) {
  const json pod = gpu_pod("train-x", {{"requests", {{"cpu", "48"}, {"memory", "100Gi"}}},
                                       {"limits", {{"memory", "1000Gi"}, {"nvidia.com/gpu", "4"}}}});
  const json resources = container_resources(apply_response(pod, webhook_->review("/mutate", admission_review(pod))));
  EXPECT_EQ(resources["requests"]["cpu"], "48");
  EXPECT_EQ(resources["requests"]["memory"], "192Gi");
  EXPECT_EQ(resources["limits"]["memory"], "1000Gi");
}

TEST_F(WebhookTest, NumericAndStringQuantitiesAreRead) {
  // Custom resources and hand-written tests carry bare numbers.
  const json pod = gpu_pod("train-x", {{"requests", {{"cpu", 8}, {"memory", 68719476736}}},
                                       {"limits", {{"memory", "68719476736"}, {"nvidia.com/gpu", 2}}}});
  const json resources = container_resources(apply_response(pod, webhook_->review("/mutate", admission_review(pod))));
  EXPECT_EQ(resources["requests"]["cpu"], "16");
  EXPECT_EQ(resources["requests"]["memory"], "96Gi");
  EXPECT_EQ(resources["limits"]["memory"], "96Gi");
}

TEST_F(WebhookTest, MissingResourceMapsAreAddedBeforeTheirKeys) {
  json pod = gpu_pod("train-x", {{"limits", {{"nvidia.com/gpu", "4"}}}});
  pod["metadata"].erase("annotations");
  // A sidecar with no resources at all stays untouched.
  pod["spec"]["containers"].push_back({{"name", "log-shipper"}, {"image", "fluent-bit"}});
  const json patched = apply_response(pod, webhook_->review("/mutate", admission_review(pod)));
  EXPECT_EQ(container_resources(patched)["requests"]["memory"], "192Gi");
  EXPECT_FALSE(patched["spec"]["containers"][1].contains("resources"));

  json bare = gpu_pod("train-y", {{"limits", {{"nvidia.com/gpu", "1"}}}});
  const json bare_patched = apply_response(bare, webhook_->review("/mutate", admission_review(bare)));
  EXPECT_EQ(container_resources(bare_patched)["requests"]["memory"], "64Gi");
  EXPECT_EQ(container_resources(bare_patched)["requests"]["cpu"], "16");
}

TEST_F(WebhookTest, RenderStageWithTwoGpusIsDenied) {
  const json pod = gpu_pod("render-x", {{"limits", {{"nvidia.com/gpu", "2"}}}}, json::object(),
                           {{"osmo.group_name", "render-stage"}});
  const json answer = webhook_->review("/validate", admission_review(pod));
  EXPECT_FALSE(answer["response"]["allowed"].get<bool>());
  const std::string message = answer["response"]["status"]["message"];
  EXPECT_NE(message.find("render_gpu=1"), std::string::npos) << message;
  EXPECT_NE(message.find("2 GPUs"), std::string::npos) << message;
}

TEST_F(WebhookTest, ExcludedNamespaceIsNotTouched) {
  const json pod = gpu_pod("train-x", {{"limits", {{"memory", "1Gi"}, {"nvidia.com/gpu", "8"}}}});
  for (const char* endpoint : {"/mutate", "/validate"}) {
    const json answer = webhook_->review(endpoint, admission_review(pod, "kube-system"));
    EXPECT_TRUE(answer["response"]["allowed"].get<bool>());
    EXPECT_FALSE(answer["response"].contains("patch"));
    EXPECT_FALSE(answer["response"].contains("warnings"));
  }
}

TEST_F(WebhookTest, DryRunGetsTheSameDecision) {
  const json pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});
  json real = webhook_->review("/mutate", admission_review(pod, "team-a", "CREATE", false));
  json dry = webhook_->review("/mutate", admission_review(pod, "team-a", "CREATE", true));
  EXPECT_EQ(real["response"], dry["response"]);
}

TEST_F(WebhookTest, UpdatesAreAllowedUnchanged) {
  const json pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});
  const json answer = webhook_->review("/validate", admission_review(pod, "team-a", "UPDATE"));
  EXPECT_TRUE(answer["response"]["allowed"].get<bool>());
  EXPECT_FALSE(answer["response"].contains("warnings"));
}

TEST_F(WebhookTest, HealthAndReadiness) {
  auto client = webhook_->client();
  auto health = client->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto ready = client->Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
}

TEST_F(WebhookTest, KeepAliveServesManyRequestsOnOneConnection) {
  auto client = webhook_->client();
  const std::string body = admission_review(gpu_pod("x", {{"limits", {{"nvidia.com/gpu", "2"}}}})).dump();
  for (int i = 0; i < 50; ++i) {
    auto result = client->Post("/mutate", body, "application/json");
    ASSERT_TRUE(result) << "request " << i;
    ASSERT_EQ(result->status, 200);
  }
}

// A sized 4-GPU training pod without /dev/shm, or with a dshm of size_limit.
json sized_training_pod(const char* size_limit = nullptr) {
  json pod = gpu_pod(
      "train-x",
      {{"limits", {{"cpu", "32"}, {"memory", "192Gi"}, {"ephemeral-storage", "300Gi"}, {"nvidia.com/gpu", "4"}}}});
  if (size_limit) {
    pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] = size_limit;
  } else {
    pod["spec"].erase("volumes");
    pod["spec"]["containers"][0].erase("volumeMounts");
  }
  return pod;
}

TEST_F(WebhookTest, TrainingPodWithoutShmGetsVolumeAndMountPatches) {
  const json pod = sized_training_pod();
  const json answer = webhook_->review("/mutate", admission_review(pod));
  const json patched = apply_response(pod, answer);
  EXPECT_EQ(patched["spec"]["volumes"],
            json::parse(R"([{"name":"gpu-sizer-shm","emptyDir":{"medium":"Memory","sizeLimit":"32Gi"}}])"));
  EXPECT_EQ(patched["spec"]["containers"][0]["volumeMounts"],
            json::parse(R"([{"name":"gpu-sizer-shm","mountPath":"/dev/shm"}])"));
  EXPECT_EQ(container_resources(patched)["limits"]["memory"], "192Gi") << "32Gi of /dev/shm is inside the table";
  const auto warnings = warnings_of(answer);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "/dev/shm: added 32Gi memory-backed emptyDir \"gpu-sizer-shm\" to \"trainer\" (train profile)");
  // Applied as the API server applies it, the pod passes the validator.
  EXPECT_TRUE(webhook_->review("/validate", admission_review(patched))["response"]["allowed"].get<bool>());
  // Dry-run gets the same patch.
  EXPECT_EQ(webhook_->review("/mutate", admission_review(pod, "team-a", "CREATE", true))["response"],
            answer["response"]);
}

TEST_F(WebhookTest, ShmJustUnderTheMinimumIsEnlargedAtAndOverItIsLeft) {
  const json under = sized_training_pod("16383Mi");
  const json patched = apply_response(under, webhook_->review("/mutate", admission_review(under)));
  EXPECT_EQ(patched["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "32Gi");
  EXPECT_FALSE(webhook_->review("/mutate", admission_review(sized_training_pod("16Gi")))["response"].contains("patch"));
  EXPECT_FALSE(
      webhook_->review("/mutate", admission_review(sized_training_pod("16385Mi")))["response"].contains("patch"));
}

TEST_F(WebhookTest, SevenBFullFineTuneOnTwo24GBGpusIsDenied) {
  json pod = gpu_pod(
      "llama-7b-sft",
      {{"limits", {{"cpu", "16"}, {"memory", "96Gi"}, {"ephemeral-storage", "300Gi"}, {"nvidia.com/gpu", "2"}}}},
      {{"gpu-sizer.io/model", "params=7B,context=4k,precision=bf16,method=full,zero=0,mode=train"}});
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-4090"}};
  const json answer = webhook_->review("/validate", admission_review(pod));
  ASSERT_FALSE(answer["response"]["allowed"].get<bool>());
  const std::string message = answer["response"]["status"]["message"];
  for (const char* part : {"127.0 GB per GPU", "112.0 certain", "25.8 GB of RTX-4090",
                           "Would fit:", "method=qlora: 12.8 GB/GPU", "method=lora,zero=3: 15.6 GB/GPU"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << "\n" << message;
  }
}

TEST_F(WebhookTest, VramWithinTheSafetyMarginIsAllowedWithAWarning) {
  json pod = gpu_pod(
      "lora-7b",
      {{"limits", {{"cpu", "16"}, {"memory", "96Gi"}, {"ephemeral-storage", "300Gi"}, {"nvidia.com/gpu", "2"}}}},
      {{"gpu-sizer.io/model", "params=7B,method=lora"}});
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-4090"}};
  const json answer = webhook_->review("/validate", admission_review(pod));
  EXPECT_TRUE(answer["response"]["allowed"].get<bool>());
  const auto warnings = warnings_of(answer);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("23.2 GB/GPU"), std::string::npos) << warnings[0];
}

struct VramCase {
  const char* model;
  bool allowed;
  const char* warning;  // in the one warning, or empty: none
};
void PrintTo(const VramCase& c, std::ostream* out) { *out << c.model; }

class VramThresholds : public WebhookTest, public ::testing::WithParamInterface<VramCase> {};

// Inference on one RTX 4090 (24564 MiB: 25.76 GB, 21.89 GB usable at 0.85):
// under the margin, at it, just over it, and weights just over the capacity.
TEST_P(VramThresholds, AllowWarnOrDeny) {
  json pod =
      gpu_pod("serve",
              {{"limits", {{"cpu", "4"}, {"memory", "64Gi"}, {"ephemeral-storage", "200Gi"}, {"nvidia.com/gpu", "1"}}}},
              {{"gpu-sizer.io/model", GetParam().model}}, {{"gpu-sizer.io/profile", "infer"}});
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-4090"}};
  const json answer = webhook_->review("/validate", admission_review(pod));
  EXPECT_EQ(answer["response"]["allowed"].get<bool>(), GetParam().allowed) << answer.dump();
  const auto warnings = warnings_of(answer);
  if (std::string(GetParam().warning).empty()) {
    EXPECT_TRUE(warnings.empty()) << answer.dump();
  } else {
    ASSERT_EQ(warnings.size(), 1u) << answer.dump();
    EXPECT_NE(warnings[0].find(GetParam().warning), std::string::npos) << warnings[0];
  }
}

INSTANTIATE_TEST_SUITE_P(Rtx4090, VramThresholds,
                         ::testing::Values(VramCase{"params=10B,context=700", true, ""},
                                           VramCase{"params=10B,context=800", true, ""},
                                           VramCase{"params=10B,context=900", true, "21.9 GB/GPU"},
                                           VramCase{"params=12.9B", false, ""}),
                         [](const auto& info) { return std::to_string(info.index); });

struct LoaderBatch {
  const char* batch;
  const char* memory;
};

class DataLoaderAnnotation : public WebhookTest, public ::testing::WithParamInterface<LoaderBatch> {};

TEST_P(DataLoaderAnnotation, RaisesMemoryPastTheTable) {
  const json pod = gpu_pod(
      "loader",
      {{"limits", {{"cpu", "16"}, {"memory", "64Gi"}, {"ephemeral-storage", "300Gi"}, {"nvidia.com/gpu", "1"}}}},
      {{"gpu-sizer.io/dataloader",
        std::string("workers=4,prefetch=2,batch=") + GetParam().batch + ",sample=1024x1024,dtype=uint8"}});
  const json patched = apply_response(pod, webhook_->review("/mutate", admission_review(pod)));
  EXPECT_EQ(container_resources(patched)["limits"]["memory"], GetParam().memory);
}

INSTANTIATE_TEST_SUITE_P(AtUnderAndOverTheTable, DataLoaderAnnotation,
                         ::testing::Values(LoaderBatch{"4700", "64Gi"}, LoaderBatch{"4800", "64Gi"},
                                           LoaderBatch{"4900", "65Gi"}),
                         [](const auto& info) { return std::string("batch") + info.param.batch; });

TEST_F(WebhookTest, MalformedDataLoaderAnnotationIsDeniedNamingThePart) {
  const json pod = gpu_pod("loader", {{"limits", {{"nvidia.com/gpu", "1"}}}},
                           {{"gpu-sizer.io/dataloader", "workers=12,batch=256,sample=3x224x"}});
  const json answer = webhook_->review("/validate", admission_review(pod));
  ASSERT_FALSE(answer["response"]["allowed"].get<bool>());
  const std::string message = answer["response"]["status"]["message"];
  EXPECT_NE(message.find("annotation gpu-sizer.io/dataloader part \"sample=3x224x\""), std::string::npos) << message;
}

TEST(WebhookModes, EnforceDeniesShmBelowTheMinimum) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  replace_file(policy, "mode: enforce\n");
  WebhookProcess webhook({"--policy", policy});
  const json pod = sized_training_pod("8Gi");
  EXPECT_FALSE(webhook.review("/mutate", admission_review(pod))["response"].contains("patch"));
  const json answer = webhook.review("/validate", admission_review(pod));
  ASSERT_FALSE(answer["response"]["allowed"].get<bool>());
  const std::string message = answer["response"]["status"]["message"];
  EXPECT_NE(message.find("set spec.volumes[0].emptyDir.sizeLimit to 32Gi"), std::string::npos) << message;
}

TEST(WebhookPolicyFile, NodeFitAtJustUnderAndJustOverTheLargestNode) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  // One node shape exactly the 8-GPU train row.
  replace_file(policy,
               "nodeFit:\n  action: deny\n  pools:\n    - name: a100\n"
               "      nodes: [{name: dgx, gpus: 8, cpu: \"64\", memory: 384Gi, ephemeralStorage: 300Gi}]\n");
  WebhookProcess webhook({"--policy", policy});
  auto allowed = [&](const char* cpu) {
    const json pod = gpu_pod(
        "train-8",
        {{"limits", {{"cpu", cpu}, {"memory", "384Gi"}, {"ephemeral-storage", "300Gi"}, {"nvidia.com/gpu", "8"}}}});
    return webhook.review("/validate", admission_review(pod))["response"]["allowed"].get<bool>();
  };
  EXPECT_TRUE(allowed("63999m")) << "below the table: sized to 64, which fits";
  EXPECT_TRUE(allowed("64"));
  EXPECT_FALSE(allowed("64001m"));
}

TEST(WebhookPolicyFile, NodeFitDenyPolicyDeniesAPodNoNodeHolds) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  replace_file(policy,
               "nodeFit:\n  action: deny\n  pools:\n    - name: a100\n"
               "      nodes: [{name: dgx-a100, gpus: 8, cpu: \"252\", memory: 1960Gi, ephemeralStorage: 28Ti}]\n");
  WebhookProcess webhook({"--policy", policy});
  const json pod = gpu_pod(
      "train-16",
      {{"limits", {{"cpu", "128"}, {"memory", "768Gi"}, {"ephemeral-storage", "300Gi"}, {"nvidia.com/gpu", "16"}}}});
  const json answer = webhook.review("/validate", admission_review(pod));
  ASSERT_FALSE(answer["response"]["allowed"].get<bool>());
  const std::string message = answer["response"]["status"]["message"];
  EXPECT_NE(message.find("dgx-a100"), std::string::npos) << message;
  EXPECT_NE(message.find("split the job into pods of at most 8 GPUs"), std::string::npos) << message;
}

TEST(WebhookModes, EnforceModeDeniesAndNeverPatches) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  replace_file(policy, "mode: enforce\n");
  WebhookProcess webhook({"--policy", policy});
  const json pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});
  const json mutated = webhook.review("/mutate", admission_review(pod));
  EXPECT_FALSE(mutated["response"].contains("patch"));
  const json validated = webhook.review("/validate", admission_review(pod));
  EXPECT_FALSE(validated["response"]["allowed"].get<bool>());
  EXPECT_NE(validated["response"]["status"]["message"].get<std::string>().find("set memory to 192Gi"),
            std::string::npos);

  // One GPU below the table is warned, not denied (denyFromGpus: 2).
  const json one = gpu_pod("train-1", {{"limits", {{"memory", "32Gi"}, {"nvidia.com/gpu", "1"}}}});
  const json one_answer = webhook.review("/validate", admission_review(one));
  EXPECT_TRUE(one_answer["response"]["allowed"].get<bool>());
  EXPECT_FALSE(warnings_of(one_answer).empty());
}

TEST(WebhookModes, AuditModeOnlyWarns) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  replace_file(policy, "mode: audit\n");
  WebhookProcess webhook({"--policy", policy});
  const json pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});
  EXPECT_FALSE(webhook.review("/mutate", admission_review(pod))["response"].contains("patch"));
  const json validated = webhook.review("/validate", admission_review(pod));
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>());
  const auto warnings = warnings_of(validated);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_EQ(warnings[0], "audit: would raise: container \"trainer\": cpu unset is below 32 for 4 GPUs (train profile)");
  EXPECT_EQ(warnings[1],
            "audit: would deny: container \"trainer\": memory 64Gi is below 192Gi for 4 GPUs (train profile)");
}

TEST(WebhookModes, PerNamespaceModeOverridesTheDefault) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  replace_file(policy, "namespaceModes: {research: audit}\n");
  WebhookProcess webhook({"--policy", policy});
  const json pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});
  EXPECT_TRUE(webhook.review("/mutate", admission_review(pod, "team-a"))["response"].contains("patch"));
  EXPECT_FALSE(webhook.review("/mutate", admission_review(pod, "research"))["response"].contains("patch"));
}

TEST(WebhookPolicyFile, ReloadsOnChangeAndKeepsTheOldPolicyWhenTheNewOneIsInvalid) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  replace_file(policy, "mode: mutate\n");
  WebhookProcess webhook({"--policy", policy, "--policy-poll", "1"});
  const json pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});
  auto patched = [&] { return webhook.review("/mutate", admission_review(pod))["response"].contains("patch"); };
  auto wait_for = [&](bool expected) {
    for (int i = 0; i < 100 && patched() != expected; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return patched() == expected;
  };
  ASSERT_TRUE(patched());

  replace_file(policy, "mode: audit\n");
  ASSERT_TRUE(wait_for(false)) << "the new policy (audit) was not picked up";

  replace_file(policy, "mode: mutate\ndenyFromGPUs: 2\n");  // typo: unknown field
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_FALSE(patched()) << "an invalid policy must not replace the active one";
  EXPECT_NE(webhook.stderr_text().find("denyFromGPUs"), std::string::npos) << "the log names the bad field";

  replace_file(policy, "mode: mutate\n");
  EXPECT_TRUE(wait_for(true));
}

TEST(WebhookStartup, RefusesAnInvalidPolicyFile) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  replace_file(policy, "profiles:\n  train:\n    table: [{gpus: 1, cpu: \"16\", memory: 64GB}]\n");
  EXPECT_THROW(WebhookProcess({"--policy", policy}), std::runtime_error);
}

TEST(WebhookShutdown, SigtermStopsCleanly) {
  WebhookProcess webhook;
  const json pod = gpu_pod("train-x", {{"limits", {{"nvidia.com/gpu", "1"}}}});
  ASSERT_TRUE(webhook.review("/mutate", admission_review(pod))["response"]["allowed"].get<bool>());
  EXPECT_EQ(webhook.stop(), 0);
  EXPECT_NE(webhook.stderr_text().find("stopped"), std::string::npos);
}

TEST(WebhookShutdown, ReviewLinesAreWrittenInBatchesAndNoneIsLostAtSigterm) {
  WebhookProcess webhook;
  const std::string log_before = webhook.stderr_text();
  const json pod = gpu_pod("train-x", {{"limits", {{"nvidia.com/gpu", "4"}}}});
  constexpr int kReviews = 50;
  for (int i = 0; i < kReviews; ++i) {
    ASSERT_TRUE(webhook.review("/mutate", admission_review(pod))["response"]["allowed"].get<bool>());
  }
  // Gathered and written in batches (log_batching_test.cpp shows they
  // wait), all of them within the timer's second.
  const auto count_reviews = [&] {
    const std::string log = webhook.stderr_text().substr(log_before.size());
    std::size_t lines = 0;
    for (std::size_t at = 0; (at = log.find("\"msg\":\"review\"", at)) != std::string::npos; ++at) ++lines;
    return lines;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (count_reviews() < kReviews && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(count_reviews(), static_cast<std::size_t>(kReviews));
  // Then reviews right before SIGTERM: written at exit.
  for (int i = 0; i < kReviews; ++i) {
    ASSERT_TRUE(webhook.review("/mutate", admission_review(pod))["response"]["allowed"].get<bool>());
  }
  EXPECT_EQ(webhook.stop(), 0);
  EXPECT_EQ(count_reviews(), static_cast<std::size_t>(2 * kReviews)) << webhook.stderr_text();
}

TEST(WebhookShutdown, ShutdownDelayFailsReadinessButKeepsServing) {
  WebhookProcess webhook({"--shutdown-delay", "2"});
  auto client = webhook.client();
  ASSERT_EQ(client->Get("/readyz")->status, 200);
  webhook.terminate();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto ready = client->Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  const json pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});
  auto answer = client->Post("/mutate", admission_review(pod).dump(), "application/json");
  ASSERT_TRUE(answer) << "requests are still answered during the delay";
  EXPECT_EQ(answer->status, 200);
  client.reset();
  EXPECT_EQ(webhook.stop(), 0);
}

TEST(WebhookShutdown, SigtermDuringStartupStillStops) {
  // A signal that lands before the listen loop runs must not be lost.
  for (int delay_ms : {2, 5, 10, 20, 40}) {
    TempDir dir;
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, STDOUT_FILENO);
      ::dup2(devnull, STDERR_FILENO);
      ::execl(GPU_SIZER_BINARY, GPU_SIZER_BINARY, "serve", "--listen", "127.0.0.1:0", "--cert-dir", dir.path().c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGTERM);
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 500 && done == 0; ++i) {
      done = ::waitpid(pid, &status, WNOHANG);
      if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
    EXPECT_NE(done, 0) << "still running 5 s after SIGTERM sent " << delay_ms << " ms after start";
  }
}

}  // namespace
}  // namespace gpusizer::testing::webhook_test
