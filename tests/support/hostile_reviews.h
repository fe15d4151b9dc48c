// AdmissionReviews shaped to cost the most per byte (issue 25): a pod or a
// workload with N of whatever the handler does work for per item
// (containers, init containers, /dev/shm volumes, Argo templates, JobSet
// jobs, pods found by shape, workflow-wide volumes and scheduling,
// annotations, unchanged templates of an UPDATE, strings every template's
// messages start from). Written as text, without a JSON library, so that
// reviews of millions of items are made in milliseconds. The benchmarks
// (bench/micro/hostile_bench.cpp) and the tests that sizing is linear
// (tests/unit/linear_scale_test.cpp) share them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpusizer::testing {

struct HostileShape {
  std::string name;  // "pod-gpu-containers"
  std::string what;  // what N counts, for the results table
  // Whether the shape does its per-item work only against a node
  // inventory (node caps, candidate filter).
  bool needs_nodes = false;
  // The AdmissionReview with n items.
  std::string (*review)(std::size_t n) = nullptr;
};

namespace hostile_detail {

inline std::string review(std::string_view group, std::string_view version, std::string_view kind,
                          const std::string& object, const std::string& old_object = "null") {
  std::string out = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{)";
  out += R"("group":")" + std::string(group) + R"(","version":")" + std::string(version) + R"(","kind":")" +
         std::string(kind) + R"("},"operation":")";
  out += old_object == "null" ? "CREATE" : "UPDATE";
  out += R"(","namespace":"team-a","name":"hostile","userInfo":{"username":"alice"},"object":)";
  out += object;
  out += R"(,"oldObject":)";
  out += old_object;
  out += "}}";
  return out;
}

inline std::string gpu_container(std::size_t i, int gpus = 1) {
  return R"({"name":"c)" + std::to_string(i) + R"(","image":"i","resources":{"limits":{"nvidia.com/gpu":)" +
         std::to_string(gpus) + "}}}";
}

// Items joined by commas.
template <typename Item>
inline std::string list(std::size_t n, Item item) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    out += item(i);
  }
  return out;
}

inline std::string pod(const std::string& spec_members) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"hostile","namespace":"team-a"},"spec":{)" +
         spec_members + "}}";
}

inline std::string pod_review(const std::string& spec_members) { return review("", "v1", "Pod", pod(spec_members)); }

// n containers of one GPU each: n shares of one floor, 3n shortfalls.
inline std::string pod_gpu_containers(std::size_t n) {
  return pod_review(R"("containers":[)" + list(n, [](std::size_t i) { return gpu_container(i); }) + "]");
}

// n containers of one GPU each already asking for their share: nothing to
// raise, so little per container but the walks over the others.
inline std::string pod_sized_containers(std::size_t n) {
  return pod_review(
      R"("containers":[)" +
      list(
          n,
          [](std::size_t i) {
            return R"({"name":"c)" + std::to_string(i) +
                   R"(","image":"i","resources":{"requests":{"cpu":"8","memory":"48Gi","ephemeral-storage":"1Gi"},"limits":{"nvidia.com/gpu":1}}})";
          }) +
      "]");
}

// One GPU container and n without GPUs, each asking for cpu and memory.
inline std::string pod_other_containers(std::size_t n) {
  return pod_review(R"("containers":[)" + gpu_container(0) + "," +
                    list(n,
                         [](std::size_t i) {
                           return R"({"name":"o)" + std::to_string(i) +
                                  R"(","image":"i","resources":{"requests":{"cpu":"1","memory":"1Gi"}}})";
                         }) +
                    "]");
}

// One 1-GPU app container and n init containers of 2 GPUs: n init phases.
inline std::string pod_init_phases(std::size_t n) {
  return pod_review(R"("containers":[)" + gpu_container(0) + R"(],"initContainers":[)" +
                    list(n, [](std::size_t i) { return gpu_container(i + 1, 2); }) + "]");
}

// Init containers alternating with sidecars (restartPolicy Always) that
// ask for cpu: each init container runs beside the sidecars before it.
inline std::string pod_sidecars(std::size_t n) {
  return pod_review(R"("containers":[)" + gpu_container(0) + R"(],"initContainers":[)" +
                    list(n,
                         [](std::size_t i) {
                           if (i % 2 == 0) return gpu_container(i + 1, 2);
                           return R"({"name":"s)" + std::to_string(i) +
                                  R"(","image":"i","restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}})";
                         }) +
                    "]");
}

// n containers each using a DRA claim of its own, and the pod's n
// resourceClaims entries naming their templates.
inline std::string pod_claims(std::size_t n) {
  return pod_review(R"("resourceClaims":[)" +
                    list(n,
                         [](std::size_t i) {
                           return R"({"name":"c)" + std::to_string(i) + R"(","resourceClaimTemplateName":"t)" +
                                  std::to_string(i) + R"("})";
                         }) +
                    R"(],"containers":[)" +
                    list(n,
                         [](std::size_t i) {
                           return R"({"name":"c)" + std::to_string(i) +
                                  R"(","image":"i","resources":{"claims":[{"name":"c)" + std::to_string(i) + R"("}]}})";
                         }) +
                    "]");
}

// n GPU containers, each mounting a memory-backed volume of its own, too
// small, at /dev/shm.
inline std::string pod_shm_volumes(std::size_t n) {
  return pod_review(
      R"("containers":[)" +
      list(n,
           [](std::size_t i) {
             const std::string v = std::to_string(i);
             return R"({"name":"c)" + v +
                    R"(","image":"i","resources":{"limits":{"nvidia.com/gpu":1}},"volumeMounts":[{"name":"v)" + v +
                    R"(","mountPath":"/dev/shm"}]})";
           }) +
      R"(],"volumes":[)" +
      list(n,
           [](std::size_t i) {
             return R"({"name":"v)" + std::to_string(i) + R"(","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}})";
           }) +
      "]");
}

// One GPU container, n/2 nodeSelector entries and n/2 required node
// affinity terms (each ANDed with the nodeSelector).
inline std::string pod_scheduling(std::size_t n) {
  const std::size_t half = n / 2;
  return pod_review(
      R"("containers":[)" + gpu_container(0) + R"(],"nodeSelector":{)" +
      list(half, [](std::size_t i) { return R"("k)" + std::to_string(i) + R"(":"v")"; }) +
      R"(},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[)" +
      list(n - half,
           [](std::size_t i) {
             return R"({"matchExpressions":[{"key":"t)" + std::to_string(i) + R"(","operator":"DoesNotExist"}]})";
           }) +
      "]}}}");
}

inline std::string workflow(const std::string& metadata_extra, const std::string& spec_members,
                            std::string_view kind = "Workflow") {
  return R"({"apiVersion":"argoproj.io/v1alpha1","kind":")" + std::string(kind) +
         R"(","metadata":{"name":"hostile","namespace":"team-a")" + metadata_extra + R"(},"spec":{)" + spec_members +
         "}}";
}

inline std::string argo_gpu_template(std::size_t i) {
  return R"({"name":"t)" + std::to_string(i) +
         R"(","container":{"image":"i","resources":{"limits":{"nvidia.com/gpu":1}}}})";
}

inline std::string templates(std::size_t n) { return R"("templates":[)" + list(n, argo_gpu_template) + "]"; }

// n templates, each a pod of one GPU: n pods decided, n annotations.
inline std::string workflow_templates(std::size_t n) {
  return review("argoproj.io", "v1alpha1", "Workflow", workflow("", templates(n)));
}

// Issue 30's large workflow: n templates, each one torchrun trainer of 4
// GPUs written with one GPU's 64Gi and 8 CPUs (about 220 bytes a template,
// 660 KB at 3,000): each is raised and given /dev/shm.
inline std::string workflow_4gpu_templates(std::size_t n) {
  return review("argoproj.io", "v1alpha1", "Workflow",
                workflow("", R"("templates":[)" + list(n, [](std::size_t i) {
                               return R"({"name":"train-)" + std::to_string(i) +
                                      R"(","container":{"name":"trainer","image":"nvcr.io/nvidia/pytorch:24.05-py3",)"
                                      R"("command":["torchrun"],"args":["--nproc_per_node=4","train.py"],)"
                                      R"("resources":{"limits":{"nvidia.com/gpu":"4","memory":"64Gi"},)"
                                      R"("requests":{"cpu":"8","memory":"64Gi"}}}})";
                             }) + "]"));
}

// n/2 GPU templates under a workflow spec with n/2 volumes, which every
// template's pod mounts.
inline std::string workflow_volumes(std::size_t n) {
  const std::size_t half = n / 2;
  return review("argoproj.io", "v1alpha1", "Workflow",
                workflow("", templates(half) + R"(,"volumes":[)" + list(n - half, [](std::size_t i) {
                               return R"({"name":"v)" + std::to_string(i) + R"(","emptyDir":{}})";
                             }) + "]"));
}

// n/2 GPU templates under a workflow spec with n/2 nodeSelector entries
// and tolerations, which every template's pod has.
inline std::string workflow_scheduling(std::size_t n) {
  const std::size_t quarter = n / 4;
  return review("argoproj.io", "v1alpha1", "Workflow",
                workflow("", templates(n - 2 * quarter) + R"(,"nodeSelector":{)" +
                                 list(quarter, [](std::size_t i) { return R"("k)" + std::to_string(i) + R"(":"v")"; }) +
                                 R"(},"tolerations":[)" +
                                 list(quarter,
                                      [](std::size_t i) {
                                        return R"({"key":"k)" + std::to_string(i) + R"(","operator":"Exists"})";
                                      }) +
                                 "]"));
}

// n/2 GPU templates under a workflow whose required node affinity has n/2
// terms, each pinning an instance type no node is: the instance catalogue
// stands in for every template (issue 28).
inline std::string workflow_machines(std::size_t n) {
  const std::size_t half = n / 2;
  return review("argoproj.io", "v1alpha1", "Workflow",
                workflow("", templates(n - half) +
                                 R"(,"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":)"
                                 R"({"nodeSelectorTerms":[)" +
                                 list(half,
                                      [](std::size_t i) {
                                        return R"({"matchExpressions":[{"key":"node.kubernetes.io/instance-type",)"
                                               R"("operator":"In","values":["g6e.2xlarge","x)" +
                                               std::to_string(i) + R"("]}]})";
                                      }) +
                                 "]}}}"));
}

// n/2 templates without GPUs under a workflow with n/2 labels and
// annotations, which every template reads past.
inline std::string workflow_metadata(std::size_t n) {
  const std::size_t half = n / 2;
  const std::string annotations =
      R"(,"annotations":{)" + list(half, [](std::size_t i) { return R"("a)" + std::to_string(i) + R"(":"v")"; }) + "}";
  return review("argoproj.io", "v1alpha1", "Workflow",
                workflow(annotations, R"("templates":[)" + list(n - half, [](std::size_t i) {
                                        return R"({"name":"t)" + std::to_string(i) + R"(","container":{"image":"i"}})";
                                      }) + "]"));
}

// n GPU templates whose templateDefaults hold n junk resources.
inline std::string workflow_defaults(std::size_t n) {
  const std::size_t half = n / 2;
  return review(
      "argoproj.io", "v1alpha1", "Workflow",
      workflow("",
               templates(half) + R"(,"templateDefaults":{"container":{"resources":{"limits":{)" +
                   list(n - half, [](std::size_t i) { return R"("example.com/r)" + std::to_string(i) + R"(":"1")"; }) +
                   "}}}}"));
}

// An UPDATE that changes a label only: every template is compared with
// the old object's at its place.
inline std::string workflow_update(std::size_t n) {
  const std::string spec = templates(n);
  return review("argoproj.io", "v1alpha1", "Workflow", workflow(R"(,"labels":{"new":"1"})", spec), workflow("", spec));
}

// n/2 GPU templates and a DAG of n/2 tasks, which the GPU-ask scan walks.
inline std::string workflow_dag(std::size_t n) {
  const std::size_t half = n / 2;
  return review(
      "argoproj.io", "v1alpha1", "Workflow",
      workflow("",
               R"("templates":[)" + list(half, argo_gpu_template) + R"(,{"name":"main","dag":{"tasks":[)" +
                   list(n - half,
                        [](std::size_t i) { return R"({"name":"d)" + std::to_string(i) + R"(","template":"t0"})"; }) +
                   "]}}]"));
}

// A JobSet of n replicated jobs, each a pod of one GPU.
inline std::string jobset(std::size_t n) {
  return review(
      "jobset.x-k8s.io", "v1alpha2", "JobSet",
      R"({"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"hostile","namespace":"team-a"},"spec":{"replicatedJobs":[)" +
          list(n,
               [](std::size_t i) {
                 return R"({"name":"j)" + std::to_string(i) +
                        R"(","template":{"spec":{"template":{"spec":{"containers":[)" + gpu_container(0) + "]}}}}}";
               }) +
          "]}}");
}

// A kind no table names, holding n GPU pod specs found by their shape.
inline std::string unknown_kind(std::size_t n) {
  return review(
      "example.com", "v1", "Thing",
      R"({"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"hostile","namespace":"team-a"},"spec":{"pods":[)" +
          list(n, [](std::size_t i) { return R"({"containers":[)" + gpu_container(i) + "]}"; }) + "]}}");
}

// A kind no table names, holding n GPU pod specs (which take the object's
// annotations), under a name and data loader, model and profile annotations
// of 20n bytes each: strings every pod's decision starts from.
inline std::string long_strings(std::size_t n) {
  const std::string padding(20 * n, 'x');
  const std::string metadata = R"({"name":"h)" + padding + R"(","namespace":"team-a","annotations":{)" +
                               R"("gpu-sizer.io/dataloader":"workers=1)" + padding + R"(",)" +
                               R"("gpu-sizer.io/model":"params=7B)" + padding + R"(",)" +
                               R"("gpu-sizer.io/profile":"p)" + padding + R"("}})";
  return review("example.com", "v1", "Thing",
                R"({"apiVersion":"example.com/v1","kind":"Thing","metadata":)" + metadata + R"(,"spec":{"pods":[)" +
                    list(n, [](std::size_t i) { return R"({"containers":[)" + gpu_container(i) + "]}"; }) + "]}}");
}

}  // namespace hostile_detail

inline const std::vector<HostileShape>& hostile_shapes() {
  using namespace hostile_detail;
  static const std::vector<HostileShape> shapes = {
      {"pod-gpu-containers", "1-GPU containers", false, pod_gpu_containers},
      {"pod-sized-containers", "1-GPU containers asking for their share", true, pod_sized_containers},
      {"pod-other-containers", "containers without GPUs", true, pod_other_containers},
      {"pod-init-phases", "2-GPU init containers", false, pod_init_phases},
      {"pod-sidecars", "init containers and sidecars", true, pod_sidecars},
      {"pod-shm-volumes", "containers with a /dev/shm volume each", false, pod_shm_volumes},
      {"pod-claims", "containers using DRA claims, and the pod's claims", false, pod_claims},
      {"pod-scheduling", "nodeSelector entries and affinity terms", true, pod_scheduling},
      {"workflow-templates", "1-GPU templates", false, workflow_templates},
      {"workflow-4gpu-templates", "4-GPU templates raised and given /dev/shm", false, workflow_4gpu_templates},
      {"workflow-volumes", "templates and workflow volumes", false, workflow_volumes},
      {"workflow-scheduling", "templates, workflow nodeSelector entries and tolerations", true, workflow_scheduling},
      {"workflow-machines", "templates and workflow affinity terms on instance types", true, workflow_machines},
      {"workflow-metadata", "templates and workflow annotations", false, workflow_metadata},
      {"workflow-defaults", "templates and templateDefaults resources", false, workflow_defaults},
      {"workflow-update", "unchanged templates of an UPDATE", false, workflow_update},
      {"workflow-dag", "templates and DAG tasks", false, workflow_dag},
      {"jobset", "replicated jobs", false, jobset},
      {"unknown-kind", "pod specs found by shape", false, unknown_kind},
      {"long-strings", "pod specs found by shape, and 20n-byte name and annotations", false, long_strings},
  };
  return shapes;
}

inline const HostileShape& hostile_shape(std::string_view name) {
  for (const HostileShape& shape : hostile_shapes()) {
    if (shape.name == name) return shape;
  }
  throw std::invalid_argument("no hostile shape " + std::string(name));
}

inline std::size_t items_for_bytes(const HostileShape& shape, std::size_t max_bytes) {
  // Item sizes grow with their index's digits: step down from the linear estimate.
  const std::size_t base = shape.review(0).size();
  const std::size_t per_item = (shape.review(1000).size() - base) / 1000;
  std::size_t n = max_bytes > base ? (max_bytes - base) / per_item : 0;
  while (n > 0 && shape.review(n).size() > max_bytes) n -= std::max<std::size_t>(1, n / 100);
  return n;
}

}  // namespace gpusizer::testing
