// CRDs that write a component's GPU count in a field of their own
// (PodShape::kFields): the built-in rows (Dynamo v1alpha1, VLLMRuntime,
// BentoDeployment, KubeAI, KAITO), a policy's own `fields:` row, and the
// scan of an unknown kind's GPU-named count fields. Through handle_review,
// as the API server sends them; the patch applied as it applies it.

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/workloads/workloads.h"
#include "support/pod_decision_support.h"
#include "support/review_support.h"

namespace gpusizer::component_fields_test {
namespace {

using nlohmann::json;
using pod_decision_test::policy_from;
using testing::apply_response;
using testing::first_manifest_object;
using testing::workload_review;

const std::string kFixtures = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/workloads/";

// The default policy, with long-lived kinds' objects patched (as check
// --fix and corpus-check size them); serving CRDs are long-lived.
const Policy& patching_policy() {
  static const Policy policy = policy_from("longLived:\n  patchTemplates: true\n");
  return policy;
}

// The AdmissionReview answered, whole (apply_response reads it).
json review(const json& object, Endpoint endpoint, const Policy& policy = patching_policy()) {
  const HttpReply reply = handle_review(policy, endpoint, workload_review(object).dump());
  EXPECT_EQ(reply.status, 200) << reply.body;
  return json::parse(reply.body);
}

json answer(const json& object, Endpoint endpoint, const Policy& policy = patching_policy()) {
  return review(object, endpoint, policy)["response"];
}

std::string warnings_of(const json& response) { return response.value("warnings", json::array()).dump(); }

TEST(ComponentFields, DynamoServicesArePatchedInTheirOwnResourcesBlock) {
  const json graph = first_manifest_object(kFixtures + "dynamographdeployment.yaml");
  const json patched = apply_response(graph, review(graph, Endpoint::kMutate));
  const json& worker = patched["spec"]["services"]["VllmDecodeWorker"]["resources"];
  // infer, 4 GPUs: the table's row, as strings the operator parses.
  EXPECT_EQ(worker["requests"]["cpu"], "16") << worker.dump();
  EXPECT_EQ(worker["requests"]["memory"], "192Gi");
  EXPECT_EQ(worker["limits"]["cpu"], "16");
  EXPECT_EQ(worker["limits"]["memory"], "192Gi");
  // The GPU count, and every key the block has no field for, as written:
  // Dynamo's block holds no ephemeral-storage.
  EXPECT_EQ(worker["limits"]["gpu"], "4");
  EXPECT_EQ(worker["requests"].size(), 3u) << worker.dump();
  EXPECT_EQ(patched["spec"]["services"]["Frontend"], graph["spec"]["services"]["Frontend"]);
  // Sized once: a second pass changes nothing, and /validate admits it silently about memory.
  EXPECT_FALSE(answer(patched, Endpoint::kMutate).contains("patch"));
  const json validated = answer(patched, Endpoint::kValidate);
  EXPECT_TRUE(validated["allowed"].get<bool>());
  EXPECT_EQ(warnings_of(validated).find("memory"), std::string::npos) << validated.dump();
}

TEST(ComponentFields, AnUndersizedDynamoServiceIsDeniedInEnforceModeNamingItsField) {
  const Policy enforce = policy_from("mode: enforce\nlongLived:\n  patchTemplates: true\n");
  const json graph = first_manifest_object(kFixtures + "dynamographdeployment.yaml");
  const json validated = answer(graph, Endpoint::kValidate, enforce);
  EXPECT_FALSE(validated["allowed"].get<bool>()) << validated.dump();
  const std::string message = validated["status"]["message"];
  EXPECT_NE(message.find("VllmDecodeWorker container \"spec.services.VllmDecodeWorker\": 4 GPUs need memory >= 192Gi"),
            std::string::npos)
      << message;
}

TEST(ComponentFields, ByDefaultADynamoGraphIsSaidNotPatchedAsLongLivedServingKinds) {
  const json graph = first_manifest_object(kFixtures + "dynamographdeployment.yaml");
  EXPECT_FALSE(answer(graph, Endpoint::kMutate, default_policy()).contains("patch"));
  const json validated = answer(graph, Endpoint::kValidate, default_policy());
  EXPECT_TRUE(validated["allowed"].get<bool>());
  EXPECT_NE(warnings_of(validated).find("at pod creation: VllmDecodeWorker container"), std::string::npos)
      << validated.dump();
}

TEST(ComponentFields, AValueThatIsNotAQuantityIsNamedByItsField) {
  json graph = first_manifest_object(kFixtures + "dynamographdeployment.yaml");
  graph["spec"]["services"]["VllmDecodeWorker"]["resources"]["requests"]["cpu"] = "lots";
  const json validated = answer(graph, Endpoint::kValidate, policy_from("mode: enforce\n"));
  EXPECT_FALSE(validated["allowed"].get<bool>());
  EXPECT_NE(validated.dump().find("spec.services.VllmDecodeWorker.resources.requests.cpu"), std::string::npos)
      << validated.dump();
  json runtime = first_manifest_object(kFixtures + "vllmruntime.yaml");
  runtime["spec"]["deploymentConfig"]["resources"]["gpu"] = "two";
  const json refused = answer(runtime, Endpoint::kValidate, policy_from("mode: enforce\n"));
  EXPECT_NE(refused.dump().find("spec.deploymentConfig.resources.gpu"), std::string::npos) << refused.dump();
}

TEST(ComponentFields, ADynamoServiceReadsItsSchedulingFromExtraPodSpec) {
  // Pinned to H100s by extraPodSpec.nodeSelector: the nodes known are
  // narrowed to them, so an L4 node's cap does not apply.
  json graph = first_manifest_object(kFixtures + "dynamographdeployment.yaml");
  JsonReader reader;
  const auto refs = find_pod_templates("nvidia.com", "DynamoGraphDeployment", reader.view_of(graph));
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[1].replica_type, "VllmDecodeWorker");
  EXPECT_EQ(refs[1].shape, PodShape::kFields);
  ASSERT_NE(refs[1].fields, nullptr);
  EXPECT_EQ(refs[1].fields->scheduling, "extraPodSpec");
}

TEST(ComponentFields, VllmRuntimesOneValueIsRaisedAsRequestAndLimit) {
  const json runtime = first_manifest_object(kFixtures + "vllmruntime.yaml");
  const json reviewed = review(runtime, Endpoint::kMutate);
  const json ops = json::parse(testing::decode_base64(reviewed["response"]["patch"]));
  const json patched = apply_response(runtime, reviewed);
  const json& resources = patched["spec"]["deploymentConfig"]["resources"];
  EXPECT_EQ(resources["cpu"], "8") << resources.dump();
  EXPECT_EQ(resources["memory"], "96Gi");
  EXPECT_EQ(resources["gpu"], "2");
  for (const json& op : ops) {
    EXPECT_NE(op["path"], "/spec/deploymentConfig/resources/ephemeral-storage") << ops.dump();
  }
  EXPECT_EQ(ops.size(), 1u) << "one operation for the component's resources: " << ops.dump();
  EXPECT_EQ(patched["spec"]["deploymentConfig"]["sidecarConfig"], runtime["spec"]["deploymentConfig"]["sidecarConfig"]);
  // Its gpuType is read, not reported as a GPU ask nothing sized.
  EXPECT_EQ(warnings_of(answer(patched, Endpoint::kValidate)).find("size by hand"), std::string::npos);
}

TEST(ComponentFields, TheGpuTypeFieldNamesTheResourceTheCountIsOf) {
  json runtime = first_manifest_object(kFixtures + "vllmruntime.yaml");
  runtime["spec"]["deploymentConfig"]["resources"]["gpuType"] = "nvidia.com/mig-3g.40gb";
  // A MIG slice is not sized by the GPU table: warned, never patched.
  const json validated = answer(runtime, Endpoint::kValidate);
  EXPECT_TRUE(validated["allowed"].get<bool>());
  EXPECT_NE(warnings_of(validated).find("mig-3g.40gb"), std::string::npos) << validated.dump();
  EXPECT_FALSE(answer(runtime, Endpoint::kMutate).contains("patch"));
}

TEST(ComponentFields, BentoRunnersAreSizedOneByOne) {
  const json bento = first_manifest_object(kFixtures + "bentodeployment.yaml");
  const json patched = apply_response(bento, review(bento, Endpoint::kMutate));
  const json& runner = patched["spec"]["runners"][0]["resources"];
  EXPECT_EQ(runner["requests"]["memory"], "96Gi") << runner.dump();
  EXPECT_EQ(runner["limits"]["memory"], "96Gi");
  EXPECT_EQ(runner["requests"]["cpu"], "8");
  EXPECT_EQ(patched["spec"]["resources"], bento["spec"]["resources"]) << "the API server holds no GPU";
}

TEST(ComponentFields, AKubeAIModelIsUnsizedNamingItsProfileAndSaysWhatItsPodsNeed) {
  const json model = first_manifest_object(kFixtures + "kubeai-model.yaml");
  EXPECT_FALSE(answer(model, Endpoint::kMutate).contains("patch"));
  const Policy enforce = policy_from("mode: enforce\n");
  for (const Policy* policy : {&default_policy(), &enforce}) {
    const json validated = answer(model, Endpoint::kValidate, *policy);
    // Its pods are sized (or denied) when created: never the Model.
    EXPECT_TRUE(validated["allowed"].get<bool>()) << validated.dump();
    const std::string warnings = warnings_of(validated);
    EXPECT_NE(warnings.find("Model ml-team/llama-3.1-70b: GPUs at spec.resourceProfile have no CPU/memory field; "
                            "pods sized at creation"),
              std::string::npos)
        << warnings;
    EXPECT_NE(warnings.find("at pod creation: "), std::string::npos) << warnings;
    EXPECT_NE(warnings.find("for 8 GPUs"), std::string::npos) << warnings;
  }
}

TEST(ComponentFields, AProfileCountThatIsNotOneIsAnErrorNamingTheField) {
  json model = first_manifest_object(kFixtures + "kubeai-model.yaml");
  model["spec"]["resourceProfile"] = "nvidia-gpu-h100";
  const json validated = answer(model, Endpoint::kValidate, policy_from("mode: enforce\n"));
  EXPECT_NE(validated.dump().find("spec.resourceProfile must be <profile>:<count> with a whole count of GPUs, found "
                                  "\\\"nvidia-gpu-h100\\\""),
            std::string::npos)
      << validated.dump();
  // A count of 0 asks for nothing.
  model["spec"]["resourceProfile"] = "cpu:0";
  EXPECT_FALSE(answer(model, Endpoint::kValidate).contains("warnings"));
}

// KubeAI's chart names each profile for its device (charts/kubeai/values.yaml,
// values-gke.yaml): its CPU profile asks for no GPU, and an AMD or TPU
// profile for that device, not for nvidia.com/gpu.
TEST(ComponentFields, AKubeAIProfileAsksForTheDeviceItIsNamedFor) {
  json model = first_manifest_object(kFixtures + "kubeai-model.yaml");
  model["spec"]["resourceProfile"] = "cpu:2";
  EXPECT_FALSE(answer(model, Endpoint::kValidate).contains("warnings")) << "no GPU in a CPU profile";
  model["spec"]["resourceProfile"] = "amd-gpu-mi300x:8";
  const std::string amd = warnings_of(answer(model, Endpoint::kValidate));
  EXPECT_NE(amd.find("for 8 GPUs"), std::string::npos) << amd;
  model["spec"]["resourceProfile"] = "google-tpu-v5e-1x1:1";
  const std::string tpu = warnings_of(answer(model, Endpoint::kValidate));
  EXPECT_NE(tpu.find("GPUs at spec.resourceProfile have no CPU/memory field"), std::string::npos) << tpu;
  EXPECT_EQ(tpu.find("for 1 GPU "), std::string::npos) << "a TPU chip is not sized as a GPU: " << tpu;
}

TEST(ComponentFields, AKaitoWorkspaceIsUnsizedNamingItsInstanceType) {
  const json workspace = first_manifest_object(kFixtures + "kaito-workspace.yaml");
  const json validated = answer(workspace, Endpoint::kValidate);
  EXPECT_TRUE(validated["allowed"].get<bool>());
  EXPECT_NE(warnings_of(validated).find("Workspace ml-team/phi-3-medium: GPUs at resource.instanceType have no "
                                        "CPU/memory field"),
            std::string::npos)
      << validated.dump();
  EXPECT_FALSE(answer(workspace, Endpoint::kMutate).contains("patch"));
}

// kaito-project/kaito examples/custom-model-integration: a Workspace whose
// inference.template asks for the GPU is sized there; its instance type's
// GPUs are that pod's, so the type is not said as having nowhere to set them.
TEST(ComponentFields, AKaitoWorkspaceWhoseTemplateHoldsTheGpusIsSizedThereOnly) {
  json workspace = first_manifest_object(kFixtures + "kaito-workspace.yaml");
  workspace["inference"] = json::parse(R"({"template": {"spec": {"containers": [{"name": "llm", "image": "x",
      "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}})");
  const std::string warnings = warnings_of(answer(workspace, Endpoint::kValidate));
  EXPECT_EQ(warnings.find("have no CPU/memory field"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("memory unset is below 64Gi for 1 GPU"), std::string::npos) << warnings;
}

// kaito-project/kaito examples/inference: an InferenceSet's template and a
// MultiRoleInference's roles name instance types, as a Workspace does.
TEST(ComponentFields, KaitoInferenceSetsAndMultiRoleInferencesAreUnsizedNamingTheirInstanceTypes) {
  const json set = json::parse(R"({"apiVersion": "kaito.sh/v1alpha1", "kind": "InferenceSet",
      "metadata": {"name": "phi", "namespace": "ml-team"}, "spec": {"replicas": 1, "template": {
      "inference": {"preset": {"name": "phi-4-mini-instruct"}},
      "resource": {"instanceType": "Standard_NC24ads_A100_v4"}}}})");
  EXPECT_NE(warnings_of(answer(set, Endpoint::kValidate))
                .find("InferenceSet ml-team/phi: GPUs at spec.template.resource.instanceType have no CPU/memory field"),
            std::string::npos);
  const json roles = json::parse(R"({"apiVersion": "kaito.sh/v1alpha1", "kind": "MultiRoleInference",
      "metadata": {"name": "ds", "namespace": "ml-team"}, "spec": {"roles": [
      {"type": "prefill", "instanceType": "Standard_NC24ads_A100_v4"},
      {"type": "decode", "instanceType": "Standard_NC24ads_A100_v4"}]}})");
  const std::string warnings = warnings_of(answer(roles, Endpoint::kValidate));
  EXPECT_NE(warnings.find("MultiRoleInference ml-team/ds: GPUs at spec.roles[1].instanceType"), std::string::npos)
      << warnings;
}

TEST(ComponentFields, APolicyRowNamesAComponentsFieldsForAKindOfItsOwn) {
  const Policy policy = policy_from(R"(workloads:
  - group: example.com
    kind: ModelServer
    fields:
      - at: spec.engines[]
        gpu: compute.gpus
        cpu: {request: compute.cpu}
        memory: compute.memory
)");
  const json server = json::parse(R"({"apiVersion": "example.com/v1", "kind": "ModelServer",
      "metadata": {"name": "m", "namespace": "serving"},
      "spec": {"engines": [{"name": "big", "compute": {"gpus": 2, "cpu": "2", "memory": "8Gi"}},
                           {"name": "small", "compute": {"cpu": "1"}}]}})");
  const json patched = apply_response(server, review(server, Endpoint::kMutate, policy));
  const json& compute = patched["spec"]["engines"][0]["compute"];
  // A kind of no role is sized with the default profile (train: 2 GPUs, 16 CPU / 96Gi).
  EXPECT_EQ(compute["cpu"], "16") << compute.dump();
  EXPECT_EQ(compute["memory"], "96Gi");
  EXPECT_EQ(compute["gpus"], 2);
  EXPECT_EQ(patched["spec"]["engines"][1], server["spec"]["engines"][1]);
  // Without the row the same object is an unknown kind whose GPU-named count is said.
  const json unknown = answer(server, Endpoint::kValidate, default_policy());
  EXPECT_NE(warnings_of(unknown).find("ModelServer serving/m: size by hand or name in policy workloads: GPUs no pod "
                                      "holds at spec.engines[0].compute.gpus"),
            std::string::npos)
      << unknown.dump();
}

TEST(ComponentFields, APolicyRowIsCheckedFieldByField) {
  const auto error = [](const std::string& fields) {
    auto parsed = parse_policy("workloads:\n  - {group: example.com, kind: S, fields: [" + fields + "]}\n", "p.yaml");
    return parsed.ok() ? std::string("parsed") : parsed.error();
  };
  EXPECT_NE(error("{at: spec}").find("workloads[0].fields[0]"), std::string::npos);
  EXPECT_NE(error("{at: spec}").find("missing field gpu"), std::string::npos) << error("{at: spec}");
  EXPECT_NE(error("{at: spec, gpu: \"a[].b\"}").find("no [] nor *"), std::string::npos);
  EXPECT_NE(error("{at: spec, gpu: g, gpuFormat: pairs}").find("must be count, profile:count or instanceType"),
            std::string::npos);
  EXPECT_NE(error("{at: spec, gpu: g, cpu: {limit: c}}").find("missing field request"), std::string::npos);
  EXPECT_NE(error("{at: spec, gpu: g, gpus: 2}").find("gpus"), std::string::npos);
  EXPECT_EQ(error("{at: spec, gpu: g, gpuFormat: \"profile:count\", cpu: c, memory: {request: m, limit: l}}"),
            "parsed");
}

TEST(ComponentFields, TheKindListingNamesAComponentsGpuField) {
  const json rows = json::parse(kind_table_json());
  const auto row = std::find_if(rows.begin(), rows.end(), [](const json& r) { return r["kind"] == "VLLMRuntime"; });
  ASSERT_NE(row, rows.end());
  EXPECT_EQ((*row)["locations"],
            json::parse(R"([{"pattern": "spec.deploymentConfig", "shape": "fields", "gpu": "resources.gpu"}])"));
  EXPECT_EQ((*row)["family"], "vllmProductionStack");
}

// An unknown kind that writes its GPU count in a field named for it is
// never passed silently; fields that describe machines, not asks, are.
TEST(GpuNamedFields, AnUnknownKindsGpuCountFieldsAreSaid) {
  struct Case {
    std::string spec;
    bool said;
  };
  const std::vector<Case> cases = {
      {R"({"numGpusPerNode": 8})", true},
      {R"({"workers": [{"gpuCount": "2"}]})", true},
      {R"({"resources": {"gpu": {"quantity": 1}}})", true},
      {R"({"gpu": {"value": "0.5"}})", true},
      {R"({"rayStartParams": {"num-gpus": "4"}})", true},
      {R"({"accelerator": {"gpus": "A100:8"}})", true},
      {R"({"gpus": 0, "gpuType": "a100", "gpuMemoryUtilization": "0.9"})", false},
      {R"({"entrypointNumGpus": 2, "maxGpus": 16})", false},
      {R"({"gpu": true, "gpus": "all"})", false},
      // A dotted configuration key by its last two parts (a SparkApplication's
      // sparkConf); a path that says gpu is no resource.
      {R"({"sparkConf": {"spark.executor.resource.gpu.amount": "1"}})", true},
      {R"({"sparkConf": {"spark.executor.resource.gpu.discoveryScript": "/opt/getGpusResources.sh"}})", false},
  };
  for (const Case& c : cases) {
    const json object = json::parse(R"({"apiVersion": "example.com/v1", "kind": "Serve",
        "metadata": {"name": "s", "namespace": "t"}, "spec": )" +
                                    c.spec + "}");
    const std::string warnings = warnings_of(answer(object, Endpoint::kValidate, default_policy()));
    EXPECT_EQ(warnings.find("GPUs no pod holds at ") != std::string::npos, c.said) << c.spec << ": " << warnings;
  }
  const json request = json::parse(R"({"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeploymentRequest",
      "metadata": {"name": "r", "namespace": "t"},
      "spec": {"hardware": {"numGpusPerNode": 8, "totalGpus": 16}, "workload": {"numGpus": 4}}})");
  const std::string warnings = warnings_of(answer(request, Endpoint::kValidate, default_policy()));
  EXPECT_NE(warnings.find("spec.workload.numGpus"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("hardware"), std::string::npos) << warnings;
}

TEST(GpuNamedFields, AKnownKindsLogicalGpuCountsAreNotAsks) {
  // KubeRay's rayStartParams num-gpus is Ray's logical count; the pod's
  // GPUs are in its template, which is read.
  const json cluster = json::parse(R"({"apiVersion": "ray.io/v1", "kind": "RayCluster",
      "metadata": {"name": "r", "namespace": "t"},
      "spec": {"headGroupSpec": {"rayStartParams": {"num-gpus": "1"},
               "template": {"spec": {"containers": [{"name": "head", "image": "ray"}]}}}}})");
  EXPECT_FALSE(answer(cluster, Endpoint::kValidate, default_policy()).contains("warnings"));
}

}  // namespace
}  // namespace gpusizer::component_fields_test
