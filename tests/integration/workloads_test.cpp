// Every workload kind through the real webhook: each fixture is sent as the
// API server would send it, the patch applied, and each template checked.
#include "gpusizer/workloads/workloads.h"

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "gpusizer/sizing/policy.h"
#include "integration/shared_webhook.h"
#include "support/api_validation.h"
#include "support/review_support.h"

namespace gpusizer::testing::workloads_test {
namespace {

const std::string kFixtures = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/workloads/";

json load_object(const std::string& file) { return first_manifest_object(kFixtures + file); }

class WorkloadsTest : public SharedWebhookTest {};

json resources_at(const json& object, const std::string& pointer) { return object.at(json::json_pointer(pointer)); }

TEST_F(WorkloadsTest, ArgoFinetuneAndInferStepsAreBothPatched) {
  const json workflow = load_object("argo-workflow.yaml");
  const json patched = apply_response(workflow, webhook_->review("/mutate", workload_review(workflow)));
  const json finetune = resources_at(patched, "/spec/templates/2/container/resources");
  ASSERT_EQ(patched["spec"]["templates"][2]["name"], "finetune");
  EXPECT_EQ(finetune["requests"]["cpu"], "32");
  EXPECT_EQ(finetune["requests"]["memory"], "192Gi");
  EXPECT_EQ(finetune["limits"]["memory"], "192Gi");
  EXPECT_EQ(finetune["requests"]["ephemeral-storage"], "300Gi");
  ASSERT_EQ(patched["spec"]["templates"][3]["name"], "infer");
  const json infer = resources_at(patched, "/spec/templates/3/script/resources");
  EXPECT_EQ(infer["requests"]["memory"], "64Gi");
  EXPECT_EQ(infer["requests"]["cpu"], "4") << "template name infer selects the infer profile";
  EXPECT_EQ(infer["requests"]["ephemeral-storage"], "200Gi");
  // The containerSet pod is the sum of its containers: 2 + 2 GPUs share 4 GPUs' needs.
  EXPECT_EQ(resources_at(patched, "/spec/templates/4/containerSet/containers/0/resources")["requests"]["memory"],
            "96Gi");
  EXPECT_EQ(resources_at(patched, "/spec/templates/4/containerSet/containers/1/resources")["requests"]["memory"],
            "96Gi");
  // The sized annotation goes on the template's metadata, so its pods carry it.
  EXPECT_TRUE(patched["spec"]["templates"][2]["metadata"]["annotations"].contains("gpu-sizer.io/sized"));
}

TEST_F(WorkloadsTest, ArgoTemplatesThatOnlyTheirPodCanDecideAreLeftWithAWarning) {
  const json workflow = load_object("argo-workflow.yaml");
  const json patched = apply_response(workflow, webhook_->review("/mutate", workload_review(workflow)));
  for (std::size_t i = 0; i < workflow["spec"]["templates"].size(); ++i) {
    const std::string name = workflow["spec"]["templates"][i]["name"];
    if (name == "param-train" || name == "patched-train") {
      EXPECT_EQ(patched["spec"]["templates"][i], workflow["spec"]["templates"][i]) << name << " must stay unchanged";
    }
  }
  const json validated = webhook_->review("/validate", workload_review(patched));
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>()) << validated.dump();
  const auto warnings = validated["response"].value("warnings", std::vector<std::string>{});
  auto has = [&](const std::string& part) {
    return std::any_of(warnings.begin(), warnings.end(),
                       [&](const auto& w) { return w.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has("template \"param-train\": nvidia.com/gpu is \"{{inputs.parameters.gpus}}\"")) << validated.dump();
  EXPECT_TRUE(has("template \"patched-train\": podSpecPatch")) << validated.dump();
}

// 8 GPUs: the 384Gi row plus the 32Gi of their 64Gi /dev/shm above the
// 32Gi the table includes (sharedMemory.tableIncludes).
TEST_F(WorkloadsTest, PyTorchJobWorkersAreRaisedTo64CpuAnd416GiWithTheir64GiShm) {
  const json job = load_object("pytorchjob.yaml");
  const json patched = apply_response(job, webhook_->review("/mutate", workload_review(job)));
  for (const char* replica : {"Master", "Worker"}) {
    const json& container = patched["spec"]["pytorchReplicaSpecs"][replica]["template"]["spec"]["containers"][0];
    ASSERT_EQ(container["name"], "pytorch");
    EXPECT_EQ(container["resources"]["requests"]["cpu"], "64") << replica;
    EXPECT_EQ(container["resources"]["requests"]["memory"], "416Gi") << replica;
    EXPECT_EQ(container["resources"]["limits"]["memory"], "416Gi") << replica;
  }
}

TEST_F(WorkloadsTest, UndersizedTemplatesAreDeniedByValidateNamingTheTemplate) {
  const json job = load_object("pytorchjob.yaml");
  const json answer = webhook_->review("/validate", workload_review(job));
  EXPECT_FALSE(answer["response"]["allowed"].get<bool>());
  const std::string message = answer["response"]["status"]["message"];
  EXPECT_NE(message.find("PyTorchJob ml-team/llama-70b-sft Worker container \"pytorch\": 8 GPUs need memory >= 416Gi "
                         "(train 384Gi + 32Gi /dev/shm)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("set memory to 416Gi and cpu to 64"), std::string::npos) << message;
  EXPECT_EQ(message.find("OSMO"), std::string::npos) << "a PyTorchJob is not an OSMO task: " << message;
}

TEST_F(WorkloadsTest, UpdatesOfWorkloadsAreDecidedToo) {
  const json job = load_object("job.yaml");
  const json answer = webhook_->review("/mutate", workload_review(job, "UPDATE"));
  EXPECT_TRUE(answer["response"].contains("patch"));
  const json patched = apply_response(job, answer);
  EXPECT_EQ(patched["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"], "96Gi");
  // A Deployment's template is decided too, but not patched (policy
  // longLived): /validate says what its Pods will get when created.
  const json deployment = load_object("deployment.yaml");
  EXPECT_FALSE(webhook_->review("/mutate", workload_review(deployment, "UPDATE"))["response"].contains("patch"));
  const json validated = webhook_->review("/validate", workload_review(deployment, "UPDATE"));
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>());
  EXPECT_NE(validated["response"]["warnings"].dump().find("at pod creation: "), std::string::npos) << validated.dump();
}

TEST_F(WorkloadsTest, ScaleAndStatusSubresourcesAreNotDecided) {
  const json deployment = load_object("deployment.yaml");
  json review = workload_review(deployment, "UPDATE");
  review["request"]["subResource"] = "status";
  EXPECT_FALSE(webhook_->review("/mutate", review)["response"].contains("patch"));
}

// Every fixture: after /mutate, the result is stable (a second /mutate
// changes nothing) and /validate admits it; every GPU template that could
// be decided was sized.
class EveryKind : public WorkloadsTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(EveryKind, MutatedObjectIsStableAndAdmitted) {
  const json object = load_object(GetParam());
  const auto& long_lived = default_policy().long_lived.kinds;
  if (std::find(long_lived.begin(), long_lived.end(), object["kind"].get<std::string>()) != long_lived.end()) {
    // Not patched (GitOps would see drift); /validate says what its Pods get.
    EXPECT_FALSE(webhook_->review("/mutate", workload_review(object))["response"].contains("patch")) << GetParam();
    const json validated = webhook_->review("/validate", workload_review(object));
    EXPECT_TRUE(validated["response"]["allowed"].get<bool>()) << validated.dump();
    EXPECT_NE(validated["response"]["warnings"].dump().find("at pod creation: "), std::string::npos)
        << validated.dump();
    return;
  }
  const json first = webhook_->review("/mutate", workload_review(object));
  ASSERT_TRUE(first["response"].contains("patch")) << GetParam() << " has an undersized GPU template";
  const json patched = apply_response(object, first);
  EXPECT_EQ(api_resource_errors(patched), std::vector<std::string>{}) << GetParam();
  const json second = webhook_->review("/mutate", workload_review(patched));
  EXPECT_FALSE(second["response"].contains("patch")) << second.dump();
  const json validated = webhook_->review("/validate", workload_review(patched));
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>()) << validated.dump();
  JsonReader reader;
  const auto templates =
      find_pod_templates(api_group(object), object["kind"].get<std::string>(), reader.view_of(patched));
  ASSERT_FALSE(templates.empty());
  JsonReader original_reader;
  const JsonView original = original_reader.view_of(object);
  std::size_t sized = 0;
  for (const auto& ref : templates) {
    // A pod spec or container written without metadata carries no
    // annotation: its resources are raised in place.
    sized += ref.shape == PodShape::kPod ? ref.pod["metadata"]["annotations"].contains("gpu-sizer.io/sized")
                                         : !(at_path(original, ref.path) == ref.pod);
  }
  EXPECT_GE(sized, 1u) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, EveryKind,
    ::testing::Values("pod.yaml", "job.yaml", "cronjob.yaml", "deployment.yaml", "statefulset.yaml", "replicaset.yaml",
                      "daemonset.yaml", "argo-workflow.yaml", "argo-workflowtemplate.yaml",
                      "argo-clusterworkflowtemplate.yaml", "argo-cronworkflow.yaml", "pytorchjob.yaml", "jobset.yaml",
                      "raycluster.yaml", "rayjob.yaml", "volcano-job.yaml", "tfjob.yaml", "mpijob.yaml",
                      "paddlejob.yaml", "xgboostjob.yaml", "jaxjob.yaml", "mxjob.yaml", "trainjob.yaml",
                      "trainingruntime.yaml", "clustertrainingruntime.yaml", "leaderworkerset.yaml", "rayservice.yaml",
                      "inferenceservice.yaml", "inferenceservice-containers.yaml", "llminferenceservice.yaml",
                      "nimservice.yaml", "nimpipeline.yaml", "job-pod-level-resources.yaml",
                      "dynamographdeployment.yaml", "vllmruntime.yaml", "bentodeployment.yaml", "kubeai-model.yaml",
                      "seldondeployment.yaml", "notebook.yaml", "rolebasedgroup.yaml", "servingruntime.yaml",
                      "podcliqueset.yaml"),
    [](const auto& info) {
      std::string name = info.param.substr(0, info.param.find('.'));
      std::erase(name, '-');
      return name;
    });

}  // namespace
}  // namespace gpusizer::testing::workloads_test
