// The kinds no release names, through the real webhook: an unknown CRD's
// GPU pod templates are found by their shape, sized, and warned about
// once; GPU asks that no pod covers are never passed silently; a policy's
// workloads list names a kind so it is sized without the warning. And the
// new kinds whose pods are not pod templates (TrainJob, KServe's model
// block) are patched where their operator reads the resources.
#include <algorithm>
#include <fstream>

#include <gtest/gtest.h>

#include "integration/shared_webhook.h"
#include "support/review_support.h"

namespace gpusizer::testing::workload_discovery_test {
namespace {

const std::string kFixtures = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/workloads/";

// An unknown CRD whose workers are pod templates with 4 GPUs at 16Gi.
json unknown_trainer() {
  return json::parse(R"({"apiVersion": "example.com/v1", "kind": "DistributedTrainer",
      "metadata": {"name": "llama", "namespace": "ml-team"},
      "spec": {"workers": [{"name": "gpu", "replicas": 2, "template": {"spec": {"containers": [
          {"name": "train", "image": "trainer:1",
           "resources": {"limits": {"nvidia.com/gpu": 4, "cpu": "4", "memory": "16Gi"}}}]}}}]}})");
}

std::string warnings_of(const json& answer) { return answer["response"].value("warnings", json::array()).dump(); }

class WorkloadDiscoveryTest : public SharedWebhookTest {};

TEST_F(WorkloadDiscoveryTest, AnUnknownKindsGpuPodTemplateIsSizedWithOneWarning) {
  const json trainer = unknown_trainer();
  const json patched = apply_response(trainer, webhook_->review("/mutate", workload_review(trainer)));
  const json& resources = patched["spec"]["workers"][0]["template"]["spec"]["containers"][0]["resources"];
  EXPECT_EQ(resources["requests"]["memory"], "192Gi") << patched.dump();
  EXPECT_EQ(resources["requests"]["cpu"], "32");
  const json validated = webhook_->review("/validate", workload_review(patched));
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>()) << validated.dump();
  const std::string warnings = warnings_of(validated);
  EXPECT_NE(warnings.find("DistributedTrainer ml-team/llama: unknown kind, sized by shape: spec.workers[0].template; "
                          "add it to policy workloads"),
            std::string::npos)
      << warnings;
  // Said once, by /validate: /mutate adds no warning of its own.
  EXPECT_EQ(warnings_of(webhook_->review("/mutate", workload_review(trainer))).find("unknown kind"), std::string::npos);
  // What it would deny is said, never denied: the template was found by a guess.
  const json undersized = webhook_->review("/validate", workload_review(trainer));
  EXPECT_TRUE(undersized["response"]["allowed"].get<bool>()) << undersized.dump();
  EXPECT_NE(warnings_of(undersized)
                .find("would deny: spec.workers[0].template container \\\"train\\\": memory 16Gi is below 192Gi"),
            std::string::npos)
      << undersized.dump();
}

TEST_F(WorkloadDiscoveryTest, GpuAsksNoPodCoversAreWarnedAboutNamingThePath) {
  json service = json::parse(R"({"apiVersion": "example.com/v1alpha1", "kind": "LlmRuntime",
      "metadata": {"name": "llama", "namespace": "serving"},
      "spec": {"deploymentConfig": {"resources": {"cpu": "5", "memory": "32Gi",
                                                    "gpuType": "nvidia.com/gpu"}}}})");
  const json validated = webhook_->review("/validate", workload_review(service));
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>());
  EXPECT_NE(warnings_of(validated).find("LlmRuntime serving/llama: size by hand or name in policy workloads: GPUs no "
                                        "pod holds at ...entConfig.resources.gpuType\""),
            std::string::npos)
      << validated.dump();
  // A known kind with a model server gpu-sizer does not name is said too.
  json isvc = json::parse(R"({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
      "metadata": {"name": "cat", "namespace": "serving"},
      "spec": {"predictor": {"catboost": {"resources": {"limits": {"nvidia.com/gpu": 2}}}}}})");
  EXPECT_NE(
      warnings_of(webhook_->review("/validate", workload_review(isvc)))
          .find("InferenceService serving/cat: size by hand or name in policy workloads: GPUs no pod holds at ..."),
      std::string::npos);
}

TEST_F(WorkloadDiscoveryTest, AKnownKindInAShapeItsRowDoesNotReadIsSizedByShape) {
  // MPIJob kubeflow.org/v1alpha1 (kubeflow/mpi-operator examples/v1alpha1):
  // one pod template at spec.template where v2beta1 has mpiReplicaSpecs.
  const json job = json::parse(R"({"apiVersion": "kubeflow.org/v1alpha1", "kind": "MPIJob",
      "metadata": {"name": "mnist", "namespace": "ml-team"},
      "spec": {"replicas": 2, "template": {"spec": {"containers": [
          {"name": "train", "image": "horovod:1", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}})");
  const json patched = apply_response(job, webhook_->review("/mutate", workload_review(job)));
  EXPECT_EQ(patched["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"], "192Gi")
      << patched.dump();
  const json validated = webhook_->review("/validate", workload_review(patched));
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>()) << validated.dump();
  EXPECT_NE(warnings_of(validated).find("MPIJob ml-team/mnist: not in its kind's known shape, sized by shape: "
                                        "spec.template"),
            std::string::npos)
      << validated.dump();
  // Its GPU count in a field of its own (spec.gpus, the operator's to
  // spread over workers) is said, never passed with no word.
  const json counted = json::parse(R"({"apiVersion": "kubeflow.org/v1alpha1", "kind": "MPIJob",
      "metadata": {"name": "bench", "namespace": "ml-team"},
      "spec": {"gpus": 16, "template": {"spec": {"containers": [{"name": "bench", "image": "tf:1"}]}}}})");
  EXPECT_NE(warnings_of(webhook_->review("/validate", workload_review(counted)))
                .find("MPIJob ml-team/bench: size by hand or name in policy workloads: GPUs no pod holds at spec.gpus"),
            std::string::npos);
}

TEST_F(WorkloadDiscoveryTest, AnUnknownKindStartingAnInferenceServerIsSizedToServe) {
  // Shaped as OME's runtimes (sgl-project/ome config/runtimes): its runner
  // is a container found by its shape, starting SGLang. (OME's own kind,
  // ClusterServingRuntime, is a long-lived runtime by its name, as
  // KServe's: warned, not patched.)
  const json runtime = json::parse(R"({"apiVersion": "example.ai/v1beta1", "kind": "EngineRunner",
      "metadata": {"name": "srt"},
      "spec": {"engineConfig": {"runner": {"name": "ome-container", "image": "lmsysorg/sglang:v0.5",
          "command": ["python3", "-m", "sglang.launch_server"], "args": ["--tp", "8"],
          "resources": {"limits": {"nvidia.com/gpu": 8}}}}}})");
  const json patched = apply_response(runtime, webhook_->review("/mutate", workload_review(runtime)));
  const json& requests = patched["spec"]["engineConfig"]["runner"]["resources"]["requests"];
  // The infer row for 8 GPUs, not train's 64 CPU.
  EXPECT_EQ(requests["cpu"], "32") << patched.dump();
  EXPECT_EQ(requests["memory"], "384Gi");
  // A container found by its shape is named by its place, not only by its
  // name (OME's leader and worker runners share theirs).
  const json unsized = webhook_->review("/validate", workload_review(runtime));
  EXPECT_NE(warnings_of(unsized).find("would deny: spec.engineConfig.runner container \\\"ome-container\\\":"),
            std::string::npos)
      << unsized.dump();
}

TEST_F(WorkloadDiscoveryTest, AnUpdateThatLeavesTheSpecAloneIsNotWarnedAgain) {
  const json trainer = unknown_trainer();
  json review = workload_review(trainer, "UPDATE");
  review["request"]["oldObject"] = trainer;
  EXPECT_EQ(warnings_of(webhook_->review("/validate", review)).find("unknown kind"), std::string::npos);
  // A change to the spec outside the templates is described again.
  json changed = trainer;
  changed["spec"]["suspend"] = true;
  json update = workload_review(changed, "UPDATE");
  update["request"]["oldObject"] = trainer;
  EXPECT_NE(warnings_of(webhook_->review("/validate", update)).find("unknown kind"), std::string::npos);
}

TEST_F(WorkloadDiscoveryTest, TrainJobIsPatchedInResourcesPerNode) {
  const json job = first_manifest_object(kFixtures + "trainjob.yaml");
  const json patched = apply_response(job, webhook_->review("/mutate", workload_review(job)));
  const json& resources = patched["spec"]["trainer"]["resourcesPerNode"];
  EXPECT_EQ(resources["requests"]["memory"], "192Gi") << patched.dump();
  EXPECT_EQ(resources["limits"]["memory"], "192Gi");
  EXPECT_EQ(resources["requests"]["cpu"], "32");
  EXPECT_FALSE(patched["spec"]["trainer"].contains("resources")) << "TrainJob has no resources field";
  EXPECT_FALSE(patched["metadata"].contains("annotations")) << patched["metadata"].dump();
}

TEST(WorkloadPolicy, AKindNamedInThePolicyIsSizedWithoutTheDiscoveryWarning) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  std::ofstream(policy) << "workloads:\n  - {group: example.com, kind: DistributedTrainer, templates: "
                           "[\"spec.workers[].template\"]}\n";
  WebhookProcess webhook({"--policy", policy});
  const json trainer = unknown_trainer();
  const json patched = apply_response(trainer, webhook.review("/mutate", workload_review(trainer)));
  EXPECT_EQ(patched["spec"]["workers"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"],
            "192Gi");
  const json validated = webhook.review("/validate", workload_review(patched));
  EXPECT_EQ(warnings_of(validated).find("unknown kind"), std::string::npos) << validated.dump();
  // The template's metadata takes the sized annotation, as a built-in kind's.
  EXPECT_TRUE(patched["spec"]["workers"][0]["template"]["metadata"]["annotations"].contains("gpu-sizer.io/sized"));
}

TEST(WorkloadPolicy, ServingKindsModelBlocksArePatchedWhenTemplatesArePatched) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  std::ofstream(policy) << "longLived:\n  patchTemplates: true\n";
  WebhookProcess webhook({"--policy", policy});
  const json service = first_manifest_object(kFixtures + "inferenceservice.yaml");
  const json patched = apply_response(service, webhook.review("/mutate", workload_review(service)));
  const json& resources = patched["spec"]["predictor"]["model"]["resources"];
  EXPECT_EQ(resources["requests"]["memory"], "96Gi") << patched.dump();
  EXPECT_EQ(resources["requests"]["cpu"], "8");
  // The transformer holds no GPU: left as written.
  EXPECT_EQ(patched["spec"]["transformer"], service["spec"]["transformer"]);
  const json nim = first_manifest_object(kFixtures + "nimservice.yaml");
  const json nim_patched = apply_response(nim, webhook.review("/mutate", workload_review(nim)));
  EXPECT_EQ(nim_patched["spec"]["resources"]["limits"]["memory"], "96Gi") << nim_patched.dump();
}

}  // namespace
}  // namespace gpusizer::testing::workload_discovery_test
