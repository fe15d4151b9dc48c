// Where the pods of the training and serving kinds are (each fixture of
// tests/data/workloads through the kind table), the discovery of pods in
// kinds no table names, GPU asks outside every pod read, and the policy's
// workloads list with its path validation.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/strings.h"
#include "gpusizer/workloads/workloads.h"
#include "support/review_support.h"

namespace gpusizer::testing::workload_kinds_test {
namespace {

const std::string kFixtures = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/workloads/";

IsGpuResource default_gpus() {
  return [](std::string_view name) { return default_policy().is_gpu_resource(name); };
}

struct KindCase {
  std::string file;
  std::vector<std::string> paths;  // the pods found, as field paths
  PodShape shape;
};

class NamedKind : public ::testing::TestWithParam<KindCase> {};

TEST_P(NamedKind, FindsEachPodAtItsDocumentedPath) {
  const json object = first_manifest_object(kFixtures + GetParam().file);
  JsonReader reader;
  const JsonView view = reader.view_of(object);
  const WorkloadKind* kind = find_workload_kind(api_group(object), object["kind"].get<std::string>(), {});
  ASSERT_NE(kind, nullptr) << GetParam().file;
  std::vector<std::string> paths;
  for (const PodTemplateRef& ref : find_pod_templates(*kind, view)) {
    paths.push_back(field_path(ref.path));
    EXPECT_EQ(ref.shape, GetParam().shape) << field_path(ref.path);
  }
  EXPECT_EQ(paths, GetParam().paths);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, NamedKind,
    ::testing::Values(
        KindCase{"tfjob.yaml", {"spec.tfReplicaSpecs.Worker.template"}, PodShape::kPod},
        KindCase{"knative-service.yaml", {"spec.template"}, PodShape::kPod},
        KindCase{"podtemplate.yaml", {"template"}, PodShape::kPod},
        KindCase{"mpijob.yaml", {"spec.mpiReplicaSpecs.Worker.template"}, PodShape::kPod},
        KindCase{"paddlejob.yaml", {"spec.paddleReplicaSpecs.Worker.template"}, PodShape::kPod},
        KindCase{"xgboostjob.yaml", {"spec.xgbReplicaSpecs.Worker.template"}, PodShape::kPod},
        KindCase{"jaxjob.yaml", {"spec.jaxReplicaSpecs.Worker.template"}, PodShape::kPod},
        KindCase{"mxjob.yaml", {"spec.mxReplicaSpecs.Worker.template"}, PodShape::kPod},
        KindCase{"trainjob.yaml", {"spec.trainer"}, PodShape::kContainer},
        KindCase{
            "trainingruntime.yaml", {"spec.template.spec.replicatedJobs[0].template.spec.template"}, PodShape::kPod},
        KindCase{"clustertrainingruntime.yaml",
                 {"spec.template.spec.replicatedJobs[0].template.spec.template"},
                 PodShape::kPod},
        KindCase{"leaderworkerset.yaml",
                 {"spec.leaderWorkerTemplate.leaderTemplate", "spec.leaderWorkerTemplate.workerTemplate"},
                 PodShape::kPod},
        KindCase{"rayservice.yaml",
                 {"spec.rayClusterConfig.headGroupSpec.template", "spec.rayClusterConfig.workerGroupSpecs[0].template"},
                 PodShape::kPod},
        KindCase{"inferenceservice-containers.yaml", {"spec.predictor"}, PodShape::kPodSpec},
        KindCase{"llminferenceservice.yaml", {"spec.template", "spec.prefill.template"}, PodShape::kPodSpec},
        KindCase{"nimservice.yaml", {"spec"}, PodShape::kContainer},
        KindCase{"nimpipeline.yaml", {"spec.services[0].spec", "spec.services[1].spec"}, PodShape::kContainer},
        KindCase{"dynamographdeployment.yaml",
                 {"spec.services.Frontend", "spec.services.VllmDecodeWorker"},
                 PodShape::kFields},
        KindCase{"vllmruntime.yaml", {"spec.deploymentConfig"}, PodShape::kFields},
        KindCase{"bentodeployment.yaml", {"spec", "spec.runners[0]"}, PodShape::kFields},
        KindCase{"kubeai-model.yaml", {"spec"}, PodShape::kFields},
        KindCase{"kaito-workspace.yaml", {"resource"}, PodShape::kFields},
        KindCase{"seldondeployment.yaml", {"spec.predictors[0].componentSpecs[0]"}, PodShape::kPod},
        KindCase{"servingruntime.yaml", {"spec"}, PodShape::kPodSpec},
        KindCase{"podcliqueset.yaml",
                 {"spec.template.cliques[0].spec.podSpec", "spec.template.cliques[1].spec.podSpec"},
                 PodShape::kPodSpec},
        KindCase{"rolebasedgroup.yaml",
                 {"spec.roles[0].standalonePattern.template", "spec.roles[1].leaderWorkerPattern.template"},
                 PodShape::kPod},
        KindCase{"notebook.yaml", {"spec.template"}, PodShape::kPod}),
    [](const auto& info) {
      std::string name = info.param.file.substr(0, info.param.file.find('.'));
      std::erase(name, '-');
      return name;
    });

TEST(NamedKinds, AKServeComponentIsAPodSpecOrAModelServerBlock) {
  const json service = first_manifest_object(kFixtures + "inferenceservice.yaml");
  JsonReader reader;
  const auto refs = find_pod_templates("serving.kserve.io", "InferenceService", reader.view_of(service));
  ASSERT_EQ(refs.size(), 2u);
  // The transformer is written as a pod spec; the predictor as a model block
  // whose pod's nodeSelector sits on the predictor around it.
  EXPECT_EQ(field_path(refs[0].path), "spec.transformer");
  EXPECT_EQ(refs[0].shape, PodShape::kPodSpec);
  EXPECT_EQ(field_path(refs[1].path), "spec.predictor.model");
  EXPECT_EQ(refs[1].shape, PodShape::kContainer);
  EXPECT_EQ(refs[1].resources_key, "resources");
  EXPECT_EQ(refs[1].scheduling["nodeSelector"]["nvidia.com/gpu.product"].string(), "NVIDIA-H100-80GB-HBM3");
}

TEST(NamedKinds, TrainJobResourcesAreItsTrainersResourcesPerNode) {
  const json job = first_manifest_object(kFixtures + "trainjob.yaml");
  JsonReader reader;
  const auto refs = find_pod_templates("trainer.kubeflow.org", "TrainJob", reader.view_of(job));
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].resources_key, "resourcesPerNode");
  EXPECT_TRUE(refs[0].scheduling.is_absent());
}

TEST(NamedKinds, ThePolicysOwnRowComesBeforeTheBuiltInOne) {
  const std::vector<WorkloadKind> own = {{"kubeflow.org", "TFJob", {{"spec.custom.template"}}}};
  const WorkloadKind* kind = find_workload_kind("kubeflow.org", "TFJob", own);
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->locations.front().pattern, "spec.custom.template");
  EXPECT_EQ(find_workload_kind("example.com", "Nothing", own), nullptr);
}

// The webhook is registered for exactly the kinds the table reads: each
// row's resource (the lower-case plural, as each CRD defines it) has a rule
// in deploy/, and each workload rule names a kind of the table. The chart
// renders the same rules (tests/e2e/chart_structure.py).
TEST(NamedKinds, DeployRegistersTheWebhookForEveryKindOfTheTableAndNoOther) {
  for (const char* file : {"50-mutatingwebhookconfiguration.yaml", "51-validatingwebhookconfiguration.yaml"}) {
    const YAML::Node config = YAML::LoadFile(std::string(GPU_SIZER_SOURCE_DIR) + "/deploy/" + file);
    std::set<std::pair<std::string, std::string>> registered;
    for (const YAML::Node& webhook : config["webhooks"]) {
      for (const YAML::Node& rule : webhook["rules"]) {
        for (const YAML::Node& group : rule["apiGroups"]) {
          for (const YAML::Node& resource : rule["resources"]) {
            registered.emplace(group.as<std::string>(), resource.as<std::string>());
          }
        }
      }
    }
    std::set<std::pair<std::string, std::string>> read;
    for (const WorkloadKind& kind : builtin_workload_kinds()) {
      read.emplace(kind.group, kind.resource);
      EXPECT_TRUE(registered.contains({kind.group, kind.resource}))
          << file << " has no rule for " << kind.kind << ": run `make generate`";
    }
    for (const auto& [group, resource] : registered) {
      if (group.empty() && resource == "pods/resize") continue;  // in-place resizes (review_resize_test.cpp)
      EXPECT_TRUE(read.contains({group, resource}))
          << file << " registers " << group << "/" << resource << ", which no row of the kind table reads";
    }
  }
}

// The default policy's kind lists are the table's: its profile rules on
// `kind` name exactly the serving kinds (infer) and the training kinds
// (train), and longLived.kinds exactly the long-lived ones. A kind added to
// the table without them, or a name left in them without a row, fails here.
std::set<std::string> table_kinds(bool (*has)(const WorkloadKind&)) {
  std::set<std::string> names;
  for (const WorkloadKind& kind : builtin_workload_kinds()) {
    if (has(kind)) names.insert(kind.kind);
  }
  return names;
}

std::set<std::string> as_set(const YAML::Node& list) {
  std::set<std::string> names;
  for (const YAML::Node& name : list) names.insert(name.as<std::string>());
  return names;
}

TEST(NamedKinds, TheDefaultPolicysKindListsAreTheTablesRolesAndLongLivedKinds) {
  const YAML::Node policy = YAML::Load(default_policy_yaml());
  std::map<std::string, std::set<std::string>> by_profile;
  for (const YAML::Node& rule : policy["profileRules"]) {
    if (rule["on"].as<std::string>() == "kind") by_profile[rule["profile"].as<std::string>()] = as_set(rule["in"]);
  }
  EXPECT_EQ(by_profile["infer"], table_kinds([](const WorkloadKind& k) { return k.role == KindRole::kServing; }))
      << "the default policy's `on: kind` rule for infer must list the table's serving kinds";
  EXPECT_EQ(by_profile["train"], table_kinds([](const WorkloadKind& k) { return k.role == KindRole::kTraining; }))
      << "the default policy's `on: kind` rule for train must list the table's training kinds";
  EXPECT_EQ(as_set(policy["longLived"]["kinds"]), table_kinds([](const WorkloadKind& k) { return k.long_lived; }))
      << "the default policy's longLived.kinds must list the table's long-lived kinds";
}

TEST(NamedKinds, EveryRowNamesItsResourceAndVersions) {
  for (const WorkloadKind& kind : builtin_workload_kinds()) {
    EXPECT_FALSE(kind.resource.empty()) << kind.kind;
    EXPECT_TRUE(
        std::none_of(kind.resource.begin(), kind.resource.end(), [](unsigned char c) { return std::isupper(c); }))
        << kind.kind << ": resource names are lower case";
    EXPECT_EQ(kind.versions, kind.family.empty() ? "v1" : "*")
        << kind.kind << ": Kubernetes' own groups are registered for v1, CRDs for every version";
  }
}

json parse(const std::string& text) { return json::parse(text); }

TEST(Discovery, FindsGpuPodTemplatesPodSpecsAndContainersOfAnUnknownKind) {
  const json object = parse(R"({"apiVersion": "example.com/v1", "kind": "Trainer", "spec": {
      "workers": [{"name": "big", "template": {"metadata": {}, "spec": {"containers": [
          {"name": "t", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}},
        {"name": "cpu-only", "template": {"spec": {"containers": [{"name": "c"}]}}}],
      "server": {"containers": [{"name": "s", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
      "engine": {"image": "vllm", "resources": {"limits": {"amd.com/gpu": 1}}}}})");
  JsonReader reader;
  // In the order of the object's keys (nlohmann's: alphabetical).
  const auto refs = discover_pod_templates(reader.view_of(object), default_gpus());
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(field_path(refs[0].path), "spec.engine");
  EXPECT_EQ(refs[0].shape, PodShape::kContainer);
  EXPECT_EQ(field_path(refs[1].path), "spec.server");
  EXPECT_EQ(refs[1].shape, PodShape::kPodSpec);
  EXPECT_EQ(field_path(refs[2].path), "spec.workers[0].template");
  EXPECT_EQ(refs[2].shape, PodShape::kPod);
}

TEST(Discovery, StatusAndMetadataHoldNoPods) {
  const json object = parse(R"({"kind": "X", "metadata": {"annotations": {"containers": []}},
      "status": {"last": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}}})");
  JsonReader reader;
  EXPECT_TRUE(discover_pod_templates(reader.view_of(object), default_gpus()).empty());
}

TEST(GpuAsks, AreFoundOutsideWhatThePodsAreReadFromAndNowhereElse) {
  const json service = parse(R"({"kind": "InferenceService", "spec": {
      "predictor": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                    "catboost": {"resources": {"limits": {"nvidia.com/gpu": "1"}}},
                    "model": {"resources": {"limits": {"nvidia.com/gpu": 2}}}},
      "engine": {"gpu": "1", "gpuType": "nvidia.com/gpu", "resources": {"requests": {"nvidia.com/gpu": 0}}},
      "runPolicy": {"schedulingPolicy": {"minResources": {"nvidia.com/gpu": 8}}},
      "limits": {"nvidia.com/gpu": 100}},
      "status": {"capacity": {"nvidia.com/gpu": 8}}})");
  JsonReader reader;
  const JsonView view = reader.view_of(service);
  const auto read = find_pod_templates("serving.kserve.io", "InferenceService", view);
  ASSERT_EQ(read.size(), 1u);  // the model block
  // Quotas (minResources), a NodePool's limits, a zero count, tolerations
  // and status ask for nothing.
  const GpuAsks asks = gpu_asks_outside(view, read, default_gpus());
  EXPECT_EQ(asks.paths, (std::vector<std::string>{"spec.engine.gpuType",
                                                  "spec.predictor.catboost.resources.limits.nvidia.com/gpu"}));
  EXPECT_EQ(asks.count, 2u);
}

TEST(GpuAsks, AnInlinePodSpecOrContainerIsReadOnlyWhereItsReaderReads) {
  // A KServe predictor written as containers beside a worker spec of its
  // own: both are read; a GPU in a field neither reads is not passed over.
  const json service = parse(R"({"kind": "InferenceService", "spec": {"predictor": {
      "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
      "workerSpec": {"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
      "sidecar": {"resources": {"limits": {"nvidia.com/gpu": 1}}}}}})");
  JsonReader reader;
  const JsonView view = reader.view_of(service);
  const auto read = find_pod_templates("serving.kserve.io", "InferenceService", view);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(field_path(read[1].path), "spec.predictor.workerSpec");
  EXPECT_EQ(gpu_asks_outside(view, read, default_gpus()).paths,
            std::vector<std::string>{"spec.predictor.sidecar.resources.limits.nvidia.com/gpu"});
  // Past the first eight, places are counted, not named.
  json many = parse(R"({"kind": "X", "spec": {}})");
  for (int i = 0; i < 10; ++i) {
    many["spec"]["c" + std::to_string(i)] = {{"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}};
  }
  JsonReader many_reader;
  const GpuAsks asks = gpu_asks_outside(many_reader.view_of(many), {}, default_gpus());
  EXPECT_EQ(asks.paths.size(), 8u);
  EXPECT_EQ(asks.count, 10u);
}

TEST(GpuAsks, DraClaimsOutsideWhatIsReadAreFoundApartFromGpuAsks) {
  // A NIMService's draResources (its operator gives every claim to the
  // main container) and a Dynamo v1alpha1 component's extraPodSpec claims
  // are not read; the claims of a pod spec that is read (a KServe
  // predictor's) are. A claim may hold any device, so it is no GPU ask.
  const json service = parse(R"({"kind": "NIMService", "spec": {
      "resources": {"limits": {"cpu": "4"}},
      "draResources": [{"resourceClaimTemplateName": "gpu-template"},
                       {"claimCreationSpec": {"devices": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}},
                       {"resourceClaimName": ""}]}})");
  JsonReader reader;
  const JsonView view = reader.view_of(service);
  const auto read = find_pod_templates("apps.nvidia.com", "NIMService", view);
  ASSERT_EQ(read.size(), 1u);
  const GpuAsks asks = gpu_asks_outside(view, read, default_gpus());
  EXPECT_EQ(asks.count, 0u);
  EXPECT_EQ(asks.claim_paths, (std::vector<std::string>{"spec.draResources[0].resourceClaimTemplateName",
                                                        "spec.draResources[1].claimCreationSpec"}));
  EXPECT_EQ(asks.claim_count, 2u);

  const json dynamo = parse(R"({"kind": "DynamoGraphDeployment", "spec": {"services": {"worker": {
      "resources": {"limits": {"gpu": "1"}},
      "extraPodSpec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "xpu"}],
                       "mainContainer": {"resources": {"claims": [{"name": "gpu"}]}}}}}}})");
  JsonReader dynamo_reader;
  const JsonView dynamo_view = dynamo_reader.view_of(dynamo);
  const auto components = find_pod_templates("nvidia.com", "DynamoGraphDeployment", dynamo_view);
  EXPECT_EQ(gpu_asks_outside(dynamo_view, components, default_gpus()).claim_paths,
            std::vector<std::string>{"spec.services.worker.extraPodSpec.resourceClaims[0].resourceClaimTemplateName"});

  const json predictor = parse(R"({"kind": "InferenceService", "spec": {"predictor": {
      "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
      "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}}})");
  JsonReader predictor_reader;
  const JsonView predictor_view = predictor_reader.view_of(predictor);
  const auto predictors = find_pod_templates("serving.kserve.io", "InferenceService", predictor_view);
  EXPECT_EQ(gpu_asks_outside(predictor_view, predictors, default_gpus()).claim_count, 0u);

  // An object with no pods read says only the claims of a pod spec no one
  // reads: a PodGroup's claims are shared by pods read on their own
  // (kubernetes-sigs/dra-example-driver demo/examples/podgroup-resourceclaimtemplate).
  const json group = parse(R"({"kind": "PodGroup", "spec": {
      "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}})");
  JsonReader group_reader;
  EXPECT_EQ(gpu_asks_outside(group_reader.view_of(group), {}, default_gpus()).claim_count, 0u);
  const json storm = parse(R"({"kind": "StormService", "spec": {"roles": [{"template": {"spec": {
      "containers": [{"name": "c", "resources": {"claims": [{"name": "neuron"}]}}],
      "resourceClaims": [{"name": "neuron", "resourceClaimTemplateName": "neuron-devices"}]}}}]}})");
  JsonReader storm_reader;
  EXPECT_EQ(gpu_asks_outside(storm_reader.view_of(storm), {}, default_gpus()).claim_paths,
            std::vector<std::string>{"spec.roles[0].template.spec.resourceClaims[0].resourceClaimTemplateName"});
}

TEST(GpuAsks, AListItemsLimitsAndAListOfGpusAsk) {
  // llmaz's OpenModel writes each flavor's limits in a list item; KubeVirt
  // names each GPU's resource, or its DRA claim, in spec.domain.devices.gpus[]
  // (kubevirt/kubevirt examples/vmi-gpu.yaml, vmi-dra-pgpu.yaml).
  const json model = parse(R"({"kind": "OpenModel", "spec": {"inferenceConfig": {"flavors": [
      {"name": "a10", "limits": {"nvidia.com/gpu": 1}}]}}})");
  JsonReader model_reader;
  EXPECT_EQ(gpu_asks_outside(model_reader.view_of(model), {}, default_gpus()).paths,
            std::vector<std::string>{"spec.inferenceConfig.flavors[0].limits.nvidia.com/gpu"});
  const json vmi = parse(R"({"kind": "VirtualMachineInstance", "spec": {"domain": {"devices": {
      "disks": [{"name": "containerdisk", "disk": {"bus": "virtio"}}],
      "gpus": [{"name": "gpu1", "deviceName": "nvidia.com/GP102GL_Tesla_P40"},
               {"name": "gpu2", "claimName": "pgpu-claim", "requestName": "pgpu"}]}}}})");
  JsonReader vmi_reader;
  const GpuAsks asks = gpu_asks_outside(vmi_reader.view_of(vmi), {}, default_gpus());
  EXPECT_EQ(asks.paths, std::vector<std::string>{"spec.domain.devices.gpus[0].deviceName"});
  EXPECT_EQ(asks.claim_paths, std::vector<std::string>{"spec.domain.devices.gpus[1].claimName"});
  // A KubeVirt instance type's spec.gpus[] describes a machine; an image
  // or a URL in a field named for GPUs is no resource.
  const json type = parse(R"({"kind": "VirtualMachineClusterInstancetype", "spec": {
      "gpus": [{"name": "gpu1", "deviceName": "nvidia.com/GA102GL_A10"}],
      "gpuOperatorImage": "nvcr.io/nvidia/gpu-operator:v24.9.0",
      "gpuDashboardUrl": "grafana.example.com/d/gpu-overview"}})");
  JsonReader type_reader;
  EXPECT_EQ(gpu_asks_outside(type_reader.view_of(type), {}, default_gpus()).count, 0u);
  // An object's own limits are a bound, not an ask (a Karpenter NodePool's).
  const json pool = parse(R"({"kind": "NodePool", "spec": {"limits": {"nvidia.com/gpu": 64},
      "template": {"spec": {"nodeClassRef": {"name": "gpu"}}}}})");
  JsonReader pool_reader;
  EXPECT_EQ(gpu_asks_outside(pool_reader.view_of(pool), {}, default_gpus()).count, 0u);
}

TEST(GpuAsks, AResourceListNamedResourcesAndKubeSpawnersExtraResourcesAsk) {
  // Dynamo's device block (ai-dynamo/dynamo examples/backends/vllm/deploy/
  // disagg_hami.yaml) and a JupyterHub profile's KubeSpawner override.
  const json graph = parse(R"({"kind": "DynamoGraphDeployment", "spec": {"services": {"Worker": {
      "device": {"resources": {"nvidia.com/gpu": "1"}, "schedulerName": "hami-scheduler"}}}}})");
  JsonReader graph_reader;
  EXPECT_EQ(gpu_asks_outside(graph_reader.view_of(graph), {}, default_gpus()).paths,
            std::vector<std::string>{"spec.services.Worker.device.resources.nvidia.com/gpu"});
  const json values = parse(R"({"singleuser": {"profileList": [{"kubespawner_override": {
      "extra_resource_limits": {"nvidia.com/gpu": "2"}, "extra_resource_guarantees": {"nvidia.com/gpu": "2"}}}]}})");
  JsonReader values_reader;
  EXPECT_EQ(gpu_asks_outside(values_reader.view_of(values), {}, default_gpus()).count, 2u);
  // A quota's hard limits and a queue's capability stay bounds.
  const json quota = parse(R"({"kind": "Profile", "spec": {"resourceQuotaSpec": {"hard": {"nvidia.com/gpu": "1"}},
      "capability": {"nvidia.com/gpu": 8}}})");
  JsonReader quota_reader;
  EXPECT_EQ(gpu_asks_outside(quota_reader.view_of(quota), {}, default_gpus()).count, 0u);
}

TEST(LocationProblem, AcceptsTemplatePathsAndNamesWhatIsWrongWithOthers) {
  EXPECT_EQ(location_problem("spec.workers[].template"), "");
  EXPECT_EQ(location_problem("spec.replicaSpecs.*.template"), "");
  EXPECT_NE(location_problem(""), "");
  EXPECT_NE(location_problem("spec..template").find("each key is a field name"), std::string::npos);
  EXPECT_NE(location_problem("spec.template.").find("empty key"), std::string::npos);
  EXPECT_NE(location_problem("spec.template/spec").find("\"template/spec\""), std::string::npos);
  EXPECT_NE(location_problem("spec.template.spec.containers[]").find("\"containers\", a field of a pod"),
            std::string::npos);
  EXPECT_NE(location_problem("metadata.annotations").find("\"metadata\""), std::string::npos);
  EXPECT_NE(location_problem("status.template").find("\"status\""), std::string::npos);
}

TEST(PolicyWorkloads, NamesKindsAndTheirPodsByShape) {
  auto policy = parse_policy(R"(workloads:
  - group: example.com
    kind: MyJob
    templates: ["spec.workers[].template"]
    podSpecs: [spec.server]
    containers: [spec.engine]
  - {kind: PodGroup, templates: [spec.template]}
)",
                             "test");
  ASSERT_TRUE(policy) << policy.error();
  const auto& kinds = policy.value().workloads;
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].group, "example.com");
  ASSERT_EQ(kinds[0].locations.size(), 3u);
  EXPECT_EQ(kinds[0].locations[1].shape, PodShape::kPodSpec);
  EXPECT_EQ(kinds[0].locations[2].shape, PodShape::kContainer);
  EXPECT_EQ(kinds[1].group, "");
  EXPECT_TRUE(default_policy().workloads.empty());
}

TEST(PolicyWorkloads, RefusesPathsThatCannotHoldAPodTemplateNamingWhere) {
  auto bad_path = parse_policy(
      "workloads:\n  - {group: example.com, kind: MyJob, templates: [spec.a, "
      "\"spec.template.spec.containers[]\"]}\n",
      "test");
  ASSERT_FALSE(bad_path);
  EXPECT_NE(bad_path.error().find("workloads[0].templates[1]"), std::string::npos) << bad_path.error();
  EXPECT_NE(bad_path.error().find("cannot hold a pod template"), std::string::npos) << bad_path.error();
  for (const auto& [text, expected] : {
           std::pair{"workloads: {kind: X}\n", "must be a list"},
           std::pair{"workloads:\n  - {group: a.io, templates: [spec.t]}\n", "missing field kind"},
           std::pair{"workloads:\n  - {group: a.io, kind: X}\n", "names no place for pods"},
           std::pair{"workloads:\n  - {group: a.io, kind: X, template: [spec.t]}\n", "unknown field (known: group"},
           std::pair{"workloads:\n  - {group: a.io, kind: X, templates: [spec.t]}\n  - {group: a.io, kind: X, "
                     "podSpecs: [spec.p]}\n",
                     "a second time"},
       }) {
    auto policy = parse_policy(text, "test");
    ASSERT_FALSE(policy) << text;
    EXPECT_NE(policy.error().find(expected), std::string::npos) << policy.error();
  }
}

}  // namespace
}  // namespace gpusizer::testing::workload_kinds_test
