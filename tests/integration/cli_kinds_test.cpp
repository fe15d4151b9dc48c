// `gpu-sizer check --fix` on the training and serving kinds (each fixture
// of tests/data/workloads fixed where its operator reads the resources,
// then checked clean), an unknown kind sized by discovery, and GPU asks
// nothing could size, which stop a CI job (exit 2) naming the path.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/cli_support.h"
#include "integration/webhook_process.h"
#include "support/review_support.h"

namespace gpusizer::testing::cli_kinds_test {
namespace {

using namespace cli_test;  // NOLINT(google-build-using-namespace)

struct FixCase {
  std::string file;
  std::string pointer;  // the container's ResourceRequirements in the fixed object
  std::string memory;   // its memory request once fixed
};

class CliFixKind : public ::testing::TestWithParam<FixCase> {};

TEST_P(CliFixKind, FixRaisesTheResourcesItsOperatorReadsAndTheResultIsClean) {
  TempDir dir;
  const std::string fixed = dir.path() + "/fixed.yaml";
  // Serving kinds' templates are patched only with longLived.patchTemplates.
  const std::string policy = dir.path() + "/policy.yaml";
  std::ofstream(policy) << "longLived:\n  patchTemplates: true\n";
  const auto fix = run(
      "check --policy " + policy + " --fix " + kWorkloads + GetParam().file + " > " + fixed + " 2>/dev/null", false);
  EXPECT_EQ(fix.exit_code, 1) << GetParam().file;
  const json object = first_manifest_object(fixed);
  EXPECT_EQ(object.at(json::json_pointer(GetParam().pointer))["requests"]["memory"], GetParam().memory)
      << object.dump();
  const auto again = run("check --policy " + policy + " " + fixed);
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, CliFixKind,
    ::testing::Values(
        FixCase{"tfjob.yaml", "/spec/tfReplicaSpecs/Worker/template/spec/containers/0/resources", "96Gi"},
        FixCase{"mpijob.yaml", "/spec/mpiReplicaSpecs/Worker/template/spec/containers/0/resources", "192Gi"},
        FixCase{"paddlejob.yaml", "/spec/paddleReplicaSpecs/Worker/template/spec/containers/0/resources", "96Gi"},
        FixCase{"xgboostjob.yaml", "/spec/xgbReplicaSpecs/Worker/template/spec/containers/0/resources", "96Gi"},
        FixCase{"jaxjob.yaml", "/spec/jaxReplicaSpecs/Worker/template/spec/containers/0/resources", "192Gi"},
        FixCase{"mxjob.yaml", "/spec/mxReplicaSpecs/Worker/template/spec/containers/0/resources", "96Gi"},
        FixCase{"trainjob.yaml", "/spec/trainer/resourcesPerNode", "192Gi"},
        FixCase{"trainingruntime.yaml",
                "/spec/template/spec/replicatedJobs/0/template/spec/template/spec/containers/0/resources", "96Gi"},
        FixCase{"clustertrainingruntime.yaml",
                "/spec/template/spec/replicatedJobs/0/template/spec/template/spec/containers/0/resources", "96Gi"},
        FixCase{"leaderworkerset.yaml", "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/resources",
                "384Gi"},
        FixCase{"rayservice.yaml", "/spec/rayClusterConfig/workerGroupSpecs/0/template/spec/containers/0/resources",
                "96Gi"},
        FixCase{"inferenceservice.yaml", "/spec/predictor/model/resources", "96Gi"},
        FixCase{"inferenceservice-containers.yaml", "/spec/predictor/containers/0/resources", "192Gi"},
        FixCase{"llminferenceservice.yaml", "/spec/prefill/template/containers/0/resources", "64Gi"},
        FixCase{"nimservice.yaml", "/spec/resources", "96Gi"},
        FixCase{"nimpipeline.yaml", "/spec/services/0/spec/resources", "64Gi"},
        FixCase{"dynamographdeployment.yaml", "/spec/services/VllmDecodeWorker/resources", "192Gi"},
        FixCase{"bentodeployment.yaml", "/spec/runners/0/resources", "96Gi"},
        FixCase{"seldondeployment.yaml", "/spec/predictors/0/componentSpecs/0/spec/containers/0/resources", "96Gi"},
        FixCase{"notebook.yaml", "/spec/template/spec/containers/0/resources", "64Gi"},
        FixCase{"servingruntime.yaml", "/spec/containers/0/resources", "96Gi"},
        FixCase{"podcliqueset.yaml", "/spec/template/cliques/1/spec/podSpec/containers/0/resources", "192Gi"},
        FixCase{"rolebasedgroup.yaml", "/spec/roles/1/leaderWorkerPattern/template/spec/containers/0/resources",
                "192Gi"}),
    [](const auto& info) {
      std::string name = info.param.file.substr(0, info.param.file.find('.'));
      std::erase(name, '-');
      return name;
    });

TEST(CliCheckKinds, AVllmRuntimeIsFixedInItsOwnFieldsAndAKubeAIModelIsUnsizedNamingItsField) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  std::ofstream(policy) << "longLived:\n  patchTemplates: true\n";
  const std::string fixed = dir.path() + "/fixed.yaml";
  EXPECT_EQ(
      run("check --policy " + policy + " --fix " + kWorkloads + "vllmruntime.yaml > " + fixed + " 2>/dev/null", false)
          .exit_code,
      1);
  const json runtime = first_manifest_object(fixed);
  EXPECT_EQ(runtime["spec"]["deploymentConfig"]["resources"]["memory"], "96Gi") << runtime.dump();
  EXPECT_EQ(run("check --policy " + policy + " " + fixed).exit_code, 0);
  // Nothing on a Model can hold CPU and memory: a CI job stops (exit 2)
  // naming the field, and says what its pods will need.
  const auto model = run("check " + kWorkloads + "kubeai-model.yaml");
  EXPECT_EQ(model.exit_code, 2) << model.output;
  EXPECT_NE(model.output.find("Model ml-team/llama-3.1-70b: GPUs at spec.resourceProfile (\"nvidia-gpu-h100:8\") "
                              "with no field of its own for their CPU and memory"),
            std::string::npos)
      << model.output;
  EXPECT_NE(model.output.find("for 8 GPUs"), std::string::npos) << model.output;
}

TEST(CliCheckKinds, AnUnknownKindsGpuTemplateIsFixedAndWarnedAbout) {
  TempDir dir;
  const std::string file = dir.path() + "/trainer.yaml";
  std::ofstream(file) << R"(apiVersion: example.com/v1
kind: DistributedTrainer
metadata: {name: llama, namespace: ml-team}
spec:
  workers:
    - name: gpu
      template:
        spec:
          containers:
            - name: train
              resources: {limits: {nvidia.com/gpu: 2, memory: 16Gi}}
)";
  const auto checked = run("check " + file);
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(
      checked.output.find("DistributedTrainer ml-team/llama: unknown kind, sized by shape: spec.workers[0].template"),
      std::string::npos)
      << checked.output;
  EXPECT_EQ(run("check --fix --in-place " + file).exit_code, 1);
  EXPECT_EQ(run("check " + file).exit_code, 0);
}

// An OpenShift Template's objects are what `oc process` creates: each is
// checked as its own kind (the Deployment a server, warned; the Job
// training, fixed in place), and a ${PARAMETER} GPU count is left for
// the Pod, as an Argo {{...}} expression is, not denied as a bad quantity.
TEST(CliCheckKinds, AnOpenShiftTemplatesObjectsAreCheckedAsTheirOwnKinds) {
  TempDir dir;
  const std::string file = dir.path() + "/template.yaml";
  std::ofstream(file) << R"(apiVersion: template.openshift.io/v1
kind: Template
metadata: {name: llm}
objects:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: vllm}
    spec:
      template:
        spec:
          containers:
            - {name: vllm, image: vllm, resources: {limits: {nvidia.com/gpu: "${GPUS}"}}}
  - apiVersion: batch/v1
    kind: Job
    metadata: {name: tune}
    spec:
      template:
        spec:
          containers:
            - {name: tune, image: pytorch, resources: {limits: {nvidia.com/gpu: "4"}}}
parameters:
  - {name: GPUS, value: "2"}
)";
  const auto checked = run("check " + file);
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("Deployment default/vllm spec.template: nvidia.com/gpu is \"${GPUS}\" until it is "
                                "filled in; its Pod is checked when created"),
            std::string::npos)
      << checked.output;
  EXPECT_NE(checked.output.find("CHANGED  " + file + ":1 (document 1) Job default/tune"), std::string::npos)
      << checked.output;
  EXPECT_EQ(checked.output.find("deny"), std::string::npos) << checked.output;
  EXPECT_EQ(run("check --fix --in-place " + file).exit_code, 1);
  const json fixed = first_manifest_object(file);
  EXPECT_EQ(fixed["objects"][1]["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"],
            "192Gi")
      << fixed.dump();
  EXPECT_EQ(run("check " + file).exit_code, 0);
  // As `oc get templates -o yaml` prints them: a List of Templates, here of
  // OpenShift 3's apiVersion v1.
  const std::string listed = dir.path() + "/templates.yaml";
  std::ofstream(listed) << R"(apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Template
    metadata: {name: old}
    objects:
      - apiVersion: batch/v1
        kind: Job
        metadata: {name: tune-v1}
        spec:
          template:
            spec:
              containers:
                - {name: tune, image: pytorch, resources: {limits: {nvidia.com/gpu: "4"}}}
)";
  const auto in_list = run("check " + listed);
  EXPECT_EQ(in_list.exit_code, 1) << in_list.output;
  EXPECT_NE(in_list.output.find("CHANGED  " + listed + ":1 (document 1) Job default/tune-v1"), std::string::npos)
      << in_list.output;
}

TEST(CliCheckKinds, DraClaimsNoPodHoldsAreWarnedAboutNamingThePath) {
  // NVIDIA/k8s-nim-operator config/samples/nim/serving/advanced/dra/manual/llm.yaml
  // (@f63f74d), cut to what check reads: the claim's template holds a GPU,
  // but the NIMService names it in a field of its own.
  TempDir dir;
  const std::string file = dir.path() + "/llm.yaml";
  std::ofstream(file) << R"(apiVersion: apps.nvidia.com/v1alpha1
kind: NIMService
metadata: {name: meta-llama3-2-1b-instruct, namespace: nim-service}
spec:
  image: {repository: nvcr.io/nim/meta/llama-3.2-1b-instruct, tag: "1.12.0"}
  replicas: 1
  draResources:
  - resourceClaimTemplateName: gpu-resourceclaimtemplate
)";
  const auto checked = run("check " + file);
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("NIMService nim-service/meta-llama3-2-1b-instruct: if its DRA claims hold GPUs, set "
                                "CPU and memory for them here (gpu-sizer table --gpus N; its Pods are sized when "
                                "created); claims not read: spec.draResources[0].resourceClaimTemplateName"),
            std::string::npos)
      << checked.output;
}

TEST(CliCheckKinds, GpuAsksNothingCouldSizeExitTwoNamingThePath) {
  TempDir dir;
  const std::string runtime = dir.path() + "/runtime.yaml";
  std::ofstream(runtime) << R"(apiVersion: example.com/v1
kind: ModelRuntime
metadata: {name: llama}
spec:
  deploymentConfig:
    resources: {cpu: "5", memory: 32Gi, numGpus: 2}
)";
  const auto checked = run("check " + runtime);
  EXPECT_EQ(checked.exit_code, 2) << checked.output;
  EXPECT_NE(checked.output.find("UNSIZED  " + runtime + ":1 (document 1) ModelRuntime default/llama"),
            std::string::npos)
      << checked.output;
  EXPECT_NE(checked.output.find("ModelRuntime default/llama: no pod gpu-sizer can size holds the GPUs at "
                                "spec.deploymentConfig.resources.numGpus; set its CPU and memory by hand, or name "
                                "its pod templates or GPU fields in the policy's workloads: list"),
            std::string::npos)
      << checked.output;
  EXPECT_EQ(checked.output.find("hold no pods"), std::string::npos) << checked.output;
  // Said apart from the objects admitted unchanged.
  EXPECT_NE(checked.output.find("1 objects with pods checked: 0 would be changed, 0 denied, 0 admitted unchanged; 1 "
                                "ask for GPUs gpu-sizer could not size"),
            std::string::npos)
      << checked.output;
  // A Helm values file is not a Kubernetes object: not an error, but it
  // says to check the rendered chart.
  const std::string values = dir.path() + "/values.yaml";
  std::ofstream(values) << "resources:\n  limits:\n    nvidia.com/gpu: 1\n";
  const auto json_report = run("check --output json " + values, false);
  EXPECT_EQ(json_report.exit_code, 0) << json_report.output;
  const auto report = nlohmann::json::parse(json_report.output);
  const std::string warning = report["files"][0]["objects"][0]["warnings"][0];
  EXPECT_NE(warning.find("not a Kubernetes object (no kind), but asks for GPUs at resources.limits.nvidia.com/gpu; "
                         "if it is a Helm values file, check the rendered chart"),
            std::string::npos)
      << warning;
}

}  // namespace
}  // namespace gpusizer::testing::cli_kinds_test
