// The built-in kind table: which kinds hold pods and where, from each
// project's published CRD (docs/workloads.md). workloads.cpp walks it.
#include <string>
#include <tuple>
#include <vector>

#include "gpusizer/workloads/workloads.h"

namespace gpusizer {

namespace {

TemplateLocation container_at(std::string pattern, std::string resources_key, int scheduling_up) {
  return {std::move(pattern), PodShape::kContainer, std::move(resources_key), scheduling_up};
}

// KServe InferenceService components (serving.kserve.io/v1beta1, kserve
// pkg/apis/serving/v1beta1/{predictor,transformer,explainer}.go): each is
// a pod spec written inline (containers, volumes, nodeSelector), and the
// predictor and explainer may instead name a model server whose container
// fields sit in a block of its own (model:, pytorch:, ...).
std::vector<TemplateLocation> inference_service_locations() {
  std::vector<TemplateLocation> locations;
  for (const char* component : {"predictor", "transformer", "explainer"}) {
    locations.push_back({std::string("spec.") + component, PodShape::kPodSpec});
  }
  // Multi-node serving: the worker pods' spec (WorkerSpec, beside
  // pipelineParallelSize and tensorParallelSize).
  locations.push_back({"spec.predictor.workerSpec", PodShape::kPodSpec});
  for (const char* server : {"model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface",
                             "pmml", "lightgbm", "paddle"}) {
    locations.push_back(container_at(std::string("spec.predictor.") + server, "resources", 1));
  }
  locations.push_back(container_at("spec.explainer.art", "resources", 1));
  return locations;
}

// KServe LLMInferenceService and its config (serving.kserve.io
// v1alpha1/v1alpha2, pkg/apis/serving/v1alpha1/llm_inference_service_types.go):
// the decode pods' spec (template), the multi-node workers' (worker), and
// the same two for disaggregated prefill.
std::vector<TemplateLocation> llm_inference_service_locations() {
  return {{"spec.template", PodShape::kPodSpec},
          {"spec.worker", PodShape::kPodSpec},
          {"spec.prefill.template", PodShape::kPodSpec},
          {"spec.prefill.worker", PodShape::kPodSpec}};
}

// A KServe ServingRuntime's and ClusterServingRuntime's pod spec, inline in
// spec (ServingRuntimePodSpec), and its multi-node workers' (workerSpec).
std::vector<TemplateLocation> serving_runtime_locations() {
  return {{"spec", PodShape::kPodSpec}, {"spec.workerSpec", PodShape::kPodSpec}};
}

// NVIDIA Dynamo's v1alpha1 components (nvidia.com, ai-dynamo/dynamo
// deploy/operator/api/v1alpha1/common.go @647025f, ResourceItem): the GPU
// count is a string at resources.limits.gpu (only the limit reaches the
// pod), its resource at limits.gpuType, and the keys of this block are laid
// over the main container's resources (internal/dynamo/graph.go
// GenerateBasePodSpec @52c2429). The pod's scheduling is in extraPodSpec.
// BentoML Yatai's BentoDeployment, which Dynamo's block descends from,
// writes the same keys (bentoml/yatai-deployment apis/serving/common/common.go
// @1ade122). docs/research/crd-gpu-fields.md has both.
TemplateLocation resource_item_at(std::string pattern) {
  TemplateLocation location{std::move(pattern), PodShape::kFields};
  location.fields = {.gpu = "resources.limits.gpu",
                     .gpu_resource = "resources.limits.gpuType",
                     .cpu_request = "resources.requests.cpu",
                     .cpu_limit = "resources.limits.cpu",
                     .memory_request = "resources.requests.memory",
                     .memory_limit = "resources.limits.memory",
                     .scheduling = "extraPodSpec"};
  return location;
}

// vLLM production-stack's VLLMRuntime (production-stack.vllm.ai/v1alpha1,
// operator/api/v1alpha1/common.go @a6c01db): one string each for cpu,
// memory and gpu, each written as the vLLM container's request and limit
// (vllmruntime_controller.go), the GPU's resource at gpuType.
TemplateLocation vllm_runtime_location() {
  TemplateLocation location{"spec.deploymentConfig", PodShape::kFields};
  location.fields = {.gpu = "resources.gpu",
                     .gpu_resource = "resources.gpuType",
                     .cpu_request = "resources.cpu",
                     .cpu_limit = "resources.cpu",
                     .memory_request = "resources.memory",
                     .memory_limit = "resources.memory"};
  return location;
}

// A GPU field with nothing beside it for CPU and memory: KubeAI's Model
// (kubeai.org/v1, api/k8s/v1/model_types.go @f442a2c) asks
// "<profile>:<count>", the profile (cluster config) holding the per-GPU
// resources; KAITO's Workspace (kaito.sh, api/v1beta1/workspace_types.go
// @056b828; its fields are top-level) names an instance type.
TemplateLocation gpu_field_only(std::string pattern, std::string gpu, GpuCountFormat format) {
  TemplateLocation location{std::move(pattern), PodShape::kFields};
  location.fields.gpu = std::move(gpu);
  location.fields.format = format;
  return location;
}

// Where each kind keeps its pod templates (docs/workloads.md, from each
// project's CRD), its resource, the chart family that registers it and
// what it runs. Adding a kind is adding a row (docs/architecture.md,
// "Where things go"): the webhook rules in deploy/ and the chart are
// generated from it (make generate), the metric labels read it, and tests
// hold the default policy's kind lists to it.
std::vector<WorkloadKind> make_kind_table() {
  constexpr KindRole kServing = KindRole::kServing;
  constexpr KindRole kTraining = KindRole::kTraining;
  std::vector<WorkloadKind> table = {
      // A Pod is decided by what owns it (the policy's ownerKind rules).
      {.group = "", .kind = "Pod", .locations = {{""}}, .resource = "pods", .versions = "v1"},
      // A PodTemplate is the pods' shape for whatever reads it (a cluster
      // autoscaler ProvisioningRequest sizes capacity from it): warned
      // with what its pods will be given, not patched.
      {.group = "",
       .kind = "PodTemplate",
       .locations = {{"template"}},
       .resource = "podtemplates",
       .versions = "v1",
       .long_lived = true},
      {.group = "batch",
       .kind = "Job",
       .locations = {{"spec.template"}},
       .resource = "jobs",
       .versions = "v1",
       .role = kTraining},
      {.group = "batch",
       .kind = "CronJob",
       .locations = {{"spec.jobTemplate.spec.template"}},
       .resource = "cronjobs",
       .versions = "v1",
       .role = kTraining},
      {.group = "apps",
       .kind = "Deployment",
       .locations = {{"spec.template"}},
       .resource = "deployments",
       .versions = "v1",
       .role = kServing,
       .long_lived = true},
      {.group = "apps",
       .kind = "StatefulSet",
       .locations = {{"spec.template"}},
       .resource = "statefulsets",
       .versions = "v1",
       .role = kServing,
       .long_lived = true},
      {.group = "apps",
       .kind = "ReplicaSet",
       .locations = {{"spec.template"}},
       .resource = "replicasets",
       .versions = "v1",
       .role = kServing,
       .long_lived = true},
      // A DaemonSet runs node agents: neither serving nor training.
      {.group = "apps",
       .kind = "DaemonSet",
       .locations = {{"spec.template"}},
       .resource = "daemonsets",
       .versions = "v1",
       .long_lived = true},
      {.group = "argoproj.io",
       .kind = "Workflow",
       .locations = {{"spec.templates[]", PodShape::kArgoTemplate}},
       .resource = "workflows",
       .family = "argo",
       .role = kTraining},
      {.group = "argoproj.io",
       .kind = "WorkflowTemplate",
       .locations = {{"spec.templates[]", PodShape::kArgoTemplate}},
       .resource = "workflowtemplates",
       .family = "argo",
       .role = kTraining},
      {.group = "argoproj.io",
       .kind = "ClusterWorkflowTemplate",
       .locations = {{"spec.templates[]", PodShape::kArgoTemplate}},
       .resource = "clusterworkflowtemplates",
       .family = "argo",
       .role = kTraining},
      {.group = "argoproj.io",
       .kind = "CronWorkflow",
       .locations = {{"spec.workflowSpec.templates[]", PodShape::kArgoTemplate}},
       .resource = "cronworkflows",
       .family = "argo",
       .role = kTraining},
      {.group = "jobset.x-k8s.io",
       .kind = "JobSet",
       .locations = {{"spec.replicatedJobs[].template.spec.template"}},
       .resource = "jobsets",
       .family = "jobset",
       .role = kTraining},
      // A RayCluster serves or trains, whichever its jobs do.
      {.group = "ray.io",
       .kind = "RayCluster",
       .locations = {{"spec.headGroupSpec.template"}, {"spec.workerGroupSpecs[].template"}},
       .resource = "rayclusters",
       .family = "ray"},
      {.group = "ray.io",
       .kind = "RayJob",
       .locations = {{"spec.rayClusterSpec.headGroupSpec.template"},
                     {"spec.rayClusterSpec.workerGroupSpecs[].template"},
                     {"spec.submitterPodTemplate"}},
       .resource = "rayjobs",
       .family = "ray",
       .role = kTraining},
      // KubeRay ray-operator/apis/ray/v1/rayservice_types.go: a RayCluster spec.
      {.group = "ray.io",
       .kind = "RayService",
       .locations = {{"spec.rayClusterConfig.headGroupSpec.template"},
                     {"spec.rayClusterConfig.workerGroupSpecs[].template"}},
       .resource = "rayservices",
       .family = "ray",
       .role = kServing,
       .long_lived = true},
      {.group = "batch.volcano.sh",
       .kind = "Job",
       .locations = {{"spec.tasks[].template"}},
       .resource = "jobs",
       .family = "volcano",
       .role = kTraining},
      // Kubeflow Trainer v2 (trainer.kubeflow.org, pkg/apis/trainer/v1alpha1):
      // a TrainJob has no pod template; spec.trainer.resourcesPerNode
      // overrides the runtime's trainer container on every node. A runtime
      // holds a JobSet spec; the platform installs it (long-lived).
      {.group = "trainer.kubeflow.org",
       .kind = "TrainJob",
       .locations = {container_at("spec.trainer", "resourcesPerNode", -1)},
       .resource = "trainjobs",
       .family = "kubeflowTrainer",
       .role = kTraining},
      {.group = "trainer.kubeflow.org",
       .kind = "TrainingRuntime",
       .locations = {{"spec.template.spec.replicatedJobs[].template.spec.template"}},
       .resource = "trainingruntimes",
       .family = "kubeflowTrainer",
       .role = kTraining,
       .long_lived = true},
      {.group = "trainer.kubeflow.org",
       .kind = "ClusterTrainingRuntime",
       .locations = {{"spec.template.spec.replicatedJobs[].template.spec.template"}},
       .resource = "clustertrainingruntimes",
       .family = "kubeflowTrainer",
       .role = kTraining,
       .long_lived = true},
      // LeaderWorkerSet (leaderworkerset.x-k8s.io/v1, api/leaderworkerset/v1).
      {.group = "leaderworkerset.x-k8s.io",
       .kind = "LeaderWorkerSet",
       .locations = {{"spec.leaderWorkerTemplate.leaderTemplate"}, {"spec.leaderWorkerTemplate.workerTemplate"}},
       .resource = "leaderworkersets",
       .family = "leaderWorkerSet",
       .role = kServing,
       .long_lived = true},
      {.group = "serving.kserve.io",
       .kind = "InferenceService",
       .locations = inference_service_locations(),
       .resource = "inferenceservices",
       .family = "kserve",
       .role = kServing,
       .long_lived = true},
      // A runtime the InferenceServices' pods are made from (serving.kserve.io
      // v1alpha1, pkg/apis/serving/v1alpha1/servingruntime_types.go @0217bda):
      // its spec holds the pod spec inline (ServingRuntimePodSpec), its
      // multi-node workers' in workerSpec. Platform objects, as
      // TrainingRuntime: warned with what their pods need, not patched.
      {.group = "serving.kserve.io",
       .kind = "ServingRuntime",
       .locations = serving_runtime_locations(),
       .resource = "servingruntimes",
       .family = "kserve",
       .role = kServing,
       .long_lived = true},
      {.group = "serving.kserve.io",
       .kind = "ClusterServingRuntime",
       .locations = serving_runtime_locations(),
       .resource = "clusterservingruntimes",
       .family = "kserve",
       .role = kServing,
       .long_lived = true},
      {.group = "serving.kserve.io",
       .kind = "LLMInferenceService",
       .locations = llm_inference_service_locations(),
       .resource = "llminferenceservices",
       .family = "kserve",
       .role = kServing,
       .long_lived = true},
      {.group = "serving.kserve.io",
       .kind = "LLMInferenceServiceConfig",
       .locations = llm_inference_service_locations(),
       .resource = "llminferenceserviceconfigs",
       .family = "kserve",
       .role = kServing,
       .long_lived = true},
      // NVIDIA NIM Operator (apps.nvidia.com/v1alpha1, api/apps/v1alpha1/nimservice_types.go):
      // one container's resources, env and args, and the pod's nodeSelector
      // and tolerations, all on the spec.
      {.group = "apps.nvidia.com",
       .kind = "NIMService",
       .locations = {container_at("spec", "resources", 0)},
       .resource = "nimservices",
       .family = "nimOperator",
       .role = kServing,
       .long_lived = true},
      // NIMPipeline (api/apps/v1alpha1/nimpipeline_types.go @07cace8): a
      // NIMService spec for each of its services.
      {.group = "apps.nvidia.com",
       .kind = "NIMPipeline",
       .locations = {container_at("spec.services[].spec", "resources", 0)},
       .resource = "nimpipelines",
       .family = "nimOperator",
       .role = kServing,
       .long_lived = true},
      // Dynamo v1beta1 writes a pod template per component instead.
      {.group = "nvidia.com",
       .kind = "DynamoGraphDeployment",
       .locations = {resource_item_at("spec.services.*"), {"spec.components[].podTemplate"}},
       .resource = "dynamographdeployments",
       .family = "dynamo",
       .role = kServing,
       .long_lived = true},
      {.group = "nvidia.com",
       .kind = "DynamoComponentDeployment",
       .locations = {resource_item_at("spec"), {"spec.podTemplate"}},
       .resource = "dynamocomponentdeployments",
       .family = "dynamo",
       .role = kServing,
       .long_lived = true},
      {.group = "production-stack.vllm.ai",
       .kind = "VLLMRuntime",
       .locations = {vllm_runtime_location()},
       .resource = "vllmruntimes",
       .family = "vllmProductionStack",
       .role = kServing,
       .long_lived = true},
      {.group = "kubeai.org",
       .kind = "Model",
       .locations = {gpu_field_only("spec", "resourceProfile", GpuCountFormat::kProfileCount)},
       .resource = "models",
       .family = "kubeai",
       .role = kServing,
       .long_lived = true},
      // A custom workload is a pod template at inference.template.
      {.group = "kaito.sh",
       .kind = "Workspace",
       .locations = {gpu_field_only("resource", "instanceType", GpuCountFormat::kInstanceType), {"inference.template"}},
       .resource = "workspaces",
       .family = "kaito",
       .role = kServing,
       .long_lived = true},
      // kaito-project/kaito examples/inference: an InferenceSet's replicas are
      // Workspaces made from spec.template; a MultiRoleInference's roles
      // (prefill, decode) each name their instance type.
      {.group = "kaito.sh",
       .kind = "InferenceSet",
       .locations = {gpu_field_only("spec.template.resource", "instanceType", GpuCountFormat::kInstanceType),
                     {"spec.template.inference.template"}},
       .resource = "inferencesets",
       .family = "kaito",
       .role = kServing,
       .long_lived = true},
      {.group = "kaito.sh",
       .kind = "MultiRoleInference",
       .locations = {gpu_field_only("spec.roles[]", "instanceType", GpuCountFormat::kInstanceType)},
       .resource = "multiroleinferences",
       .family = "kaito",
       .role = kServing,
       .long_lived = true},
      // Knative Serving (knative/serving pkg/apis/serving/v1): a Service's
      // and a Configuration's spec.template is the pod template each
      // Revision runs, as a Deployment of always-on servers.
      {.group = "serving.knative.dev",
       .kind = "Service",
       .locations = {{"spec.template"}},
       .resource = "services",
       .family = "knative",
       .role = kServing,
       .long_lived = true},
      {.group = "serving.knative.dev",
       .kind = "Configuration",
       .locations = {{"spec.template"}},
       .resource = "configurations",
       .family = "knative",
       .role = kServing,
       .long_lived = true},
      {.group = "serving.yatai.ai",
       .kind = "BentoDeployment",
       .locations = {resource_item_at("spec"), resource_item_at("spec.runners[]")},
       .resource = "bentodeployments",
       .family = "bentoml",
       .role = kServing,
       .long_lived = true},
      // Seldon Core v1 (operator/apis/machinelearning.seldon.io/v1/
      // seldondeployment_types.go @cbff393): each predictor's componentSpecs
      // are SeldonPodSpecs ({metadata, spec: PodSpec}), each a Deployment.
      {.group = "machinelearning.seldon.io",
       .kind = "SeldonDeployment",
       .locations = {{"spec.predictors[].componentSpecs[]"}},
       .resource = "seldondeployments",
       .family = "seldon",
       .role = kServing,
       .long_lived = true},
      // RoleBasedGroup (sgl-project/rbg api/workloads, @993491f): the roles
      // of a disaggregated LLM server. v1alpha2 writes each role's pod
      // template under its pattern (standalone, leader-worker, custom
      // components), v1alpha1 on the role; reusable roleTemplates in both.
      {.group = "workloads.x-k8s.io",
       .kind = "RoleBasedGroup",
       .locations = {{"spec.roles[].template"},
                     {"spec.roles[].standalonePattern.template"},
                     {"spec.roles[].leaderWorkerPattern.template"},
                     {"spec.roles[].customComponentsPattern.components[].template"},
                     {"spec.roles[].components[].template"},
                     {"spec.roleTemplates[].template"}},
       .resource = "rolebasedgroups",
       .family = "roleBasedGroup",
       .role = kServing,
       .long_lived = true},
      // Grove (ai-dynamo/grove operator/api/core/v1alpha1/podcliqueset.go
      // and podclique.go @fcc3b3b): a PodCliqueSet's cliques each run pods of
      // their spec.podSpec; NVIDIA Dynamo runs its disaggregated servers on it.
      {.group = "grove.io",
       .kind = "PodCliqueSet",
       .locations = {{"spec.template.cliques[].spec.podSpec", PodShape::kPodSpec}},
       .resource = "podcliquesets",
       .family = "grove",
       .role = kServing,
       .long_lived = true},
      // Kubeflow Notebooks (components/notebook-controller/api/v1/
      // notebook_types.go @b9f455d, also OpenShift AI's workbenches):
      // spec.template.spec is the PodSpec of the notebook's StatefulSet: an
      // always-on (interactive) server, as its StatefulSet's pods are sized.
      {.group = "kubeflow.org",
       .kind = "Notebook",
       .locations = {{"spec.template"}},
       .resource = "notebooks",
       .family = "kubeflowNotebooks",
       .role = kServing,
       .long_lived = true},
  };
  // Kubeflow training-operator v1 (kubeflow.org, pkg/apis/kubeflow.org/v1)
  // and mpi-operator v2beta1: one family, spec.<x>ReplicaSpecs.<type>.template.
  for (const auto& [kind, specs, resource] :
       {std::tuple{"PyTorchJob", "pytorchReplicaSpecs", "pytorchjobs"}, std::tuple{"TFJob", "tfReplicaSpecs", "tfjobs"},
        std::tuple{"MPIJob", "mpiReplicaSpecs", "mpijobs"}, std::tuple{"PaddleJob", "paddleReplicaSpecs", "paddlejobs"},
        std::tuple{"XGBoostJob", "xgbReplicaSpecs", "xgboostjobs"}, std::tuple{"JAXJob", "jaxReplicaSpecs", "jaxjobs"},
        std::tuple{"MXJob", "mxReplicaSpecs", "mxjobs"}}) {
    table.push_back({.group = "kubeflow.org",
                     .kind = kind,
                     .locations = {{std::string("spec.") + specs + ".*.template"}},
                     .resource = resource,
                     .family = "kubeflowTraining",
                     .role = kTraining});
  }
  return table;
}

}  // namespace

const std::vector<WorkloadKind>& builtin_workload_kinds() {
  static const std::vector<WorkloadKind> table = make_kind_table();
  return table;
}

}  // namespace gpusizer
