#include "gpusizer/admission/pod_reader.h"

#include <algorithm>
#include <utility>

#include "gpusizer/admission/claim_uses.h"
#include "gpusizer/admission/component_fields.h"
#include "gpusizer/admission/serving_flags.h"
#include "gpusizer/admission/workload_identity.h"
#include "gpusizer/sizing/accelerator_asks.h"
#include "gpusizer/sizing/data_loader.h"
#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/sizing/node_fit.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// A field's name in messages ("spec.containers[0]"), written out only when a
// message needs it: most containers have nothing to report.
class FieldName {
 public:
  explicit FieldName(const std::vector<std::string>& path) : path_(&path) {}
  explicit FieldName(std::string text) : text_(std::move(text)) {}
  std::string text() const { return path_ ? field_path(*path_) : text_; }

 private:
  const std::vector<std::string>* path_ = nullptr;
  std::string text_;
};

class PodReader {
 public:
  PodReader(const Policy& policy, const PodTarget& target) : policy_(policy), target_(target) {
    static_cast<PodContext&>(reading_.facts) = target.context;
  }

  PodReading read() {
    read_selection();
    switch (target_.ref.shape) {
      case PodShape::kArgoTemplate: read_argo_template(); break;
      case PodShape::kPod: read_pod_spec(pod()["spec"], {"spec"}); break;
      case PodShape::kPodSpec: read_pod_spec(pod(), {}); break;
      case PodShape::kContainer: read_container_only(); break;
      case PodShape::kFields: read_component_fields(); break;
    }
    // Volumes and where the pod may run matter only to the rules of GPU pods.
    const auto holds_gpus = [](const std::vector<ContainerFacts>& list) {
      return std::any_of(list.begin(), list.end(), [](const ContainerFacts& c) { return c.gpus > 0; });
    };
    if (holds_gpus(facts().app) || holds_gpus(facts().init)) {
      switch (target_.ref.shape) {
        case PodShape::kArgoTemplate: {
          read_volume_list(pod()["volumes"], absolute({"volumes"}), facts());
          read_scheduling(policy_, pod(), facts());
          // The workflow's volumes and scheduling, read once for all of its
          // templates: the template's second volume list, and what it does
          // not set itself.
          facts().workflow = workflow().fields;
          facts().volume_lists.push_back(facts().workflow->spec.volume_lists.at(1));
          break;
        }
        case PodShape::kPod:
          read_volume_list(pod()["spec"]["volumes"], absolute({"spec", "volumes"}), facts());
          read_scheduling(policy_, pod()["spec"], facts());
          break;
        case PodShape::kPodSpec:
          read_volume_list(pod()["volumes"], absolute({"volumes"}), facts());
          read_scheduling(policy_, pod(), facts());
          break;
        case PodShape::kContainer:
          // The operator builds the pod and its volumes: none to add to.
          read_scheduling(policy_, target_.ref.scheduling, facts());
          break;
        case PodShape::kFields:
          if (!target_.ref.fields->scheduling.empty())
            read_scheduling(policy_, at_field(pod(), target_.ref.fields->scheduling), facts());
          break;
      }
    }
    return std::move(reading_);
  }

 private:
  enum class Role { kApp, kInit };

  PodFacts& facts() { return reading_.facts; }
  JsonView pod() const { return target_.ref.pod; }

  std::vector<std::string> absolute(const std::vector<std::string>& tokens) const {
    std::vector<std::string> path = target_.ref.path;
    path.insert(path.end(), tokens.begin(), tokens.end());
    return path;
  }
  std::string field(const std::vector<std::string>& tokens) const { return field_path(absolute(tokens)); }

  void problem(ProblemCode code, const std::string& field, const std::string& what, bool accelerator_field = false) {
    reading_.problems.push_back({code, field, target_.context.description + ": " + field + " " + what});
    reading_.accelerator_problem = reading_.accelerator_problem || accelerator_field;
  }

  // The template's own labels and annotations first, then the object's.
  void read_selection() {
    const JsonView metadata = pod()["metadata"];
    // The sized annotation is added into these maps: a JSON Patch cannot add
    // a key under any other type (nor is it pod metadata).
    if (!metadata.is_null() && !metadata.is_object()) {
      problem(ProblemCode::kWrongType, field({"metadata"}), "is not an object");
    } else if (const JsonView annotations = metadata["annotations"];
               !annotations.is_null() && !annotations.is_object()) {
      problem(ProblemCode::kWrongType, field({"metadata", "annotations"}), "is not an object");
    }
    SelectionInput& selection = facts().selection;
    read_wanted_metadata(policy_, metadata, true, {selection.labels, selection.annotations, selection.name});
    // The object's, read once for all of its templates.
    selection.inherited = target_.inherited;
    if (!selection.inherited && !target_.parent_metadata.is_absent()) {
      selection.inherited =
          read_inherited_selection(policy_, target_.parent_metadata, has_own_metadata(target_.ref.shape));
    }
    selection.template_name = target_.ref.template_name;
    selection.replica_type = target_.ref.replica_type;
    selection.kind = target_.kind;
    selection.owner_kind = controller_kind(metadata["ownerReferences"]);
    // A Pod's workload, for history; a template's Pods are read when created.
    if (target_.kind == "Pod" && target_.ref.shape == PodShape::kPod &&
        policy_.rule_settings.get<HistoryPolicy>().mode != HistoryPolicy::Mode::kOff) {
      const PodOrigin origin = read_pod_origin(metadata);
      facts().workload = workload_identity(origin).text();
      facts().namespace_name = target_.namespace_name;
    }
    const std::string* opt_out = facts().annotation(kMutateOptOutKey);
    facts().opted_out = opt_out && *opt_out == "false";
    facts().annotation_accelerators =
        std::any_of(policy_.accelerator_annotations.begin(), policy_.accelerator_annotations.end(),
                    [&](const AcceleratorClass& each) { return facts().annotation(each.annotation) != nullptr; });
  }

  // A pod spec at `spec`, `tokens` below the target (["spec"] in a pod
  // template, [] for a pod spec written inline).
  void read_pod_spec(JsonView spec, const std::vector<std::string>& tokens) {
    const auto below = [&](std::string key) {
      std::vector<std::string> path = tokens;
      path.push_back(std::move(key));
      return path;
    };
    if (!spec.is_object()) {
      problem(ProblemCode::kWrongType, field_path(absolute(tokens)), "is missing or not an object");
      return;
    }
    // The fields read here, in one pass over the spec's.
    JsonView containers, init_containers, volumes, resources;
    spec.for_each_member([&](std::string_view key, JsonView value) {
      if (key == "containers") containers = value;
      if (key == "initContainers") init_containers = value;
      if (key == "volumes") volumes = value;
      if (key == "resources") resources = value;
      if (key == "resourceClaims") claim_uses_.set_pod_claims(value);
    });
    if (!containers.is_array()) {
      problem(ProblemCode::kWrongType, field_path(absolute(below("containers"))), "is missing or not a list");
      return;
    }
    read_list(containers, below("containers"), Role::kApp);
    read_list(init_containers, below("initContainers"), Role::kInit);
    check_volumes_list(volumes, below("volumes"));
    if (!resources.is_null()) read_pod_level(spec, absolute(tokens));
  }

  // spec.resources, as a container at the spec's path named for the field.
  // Only cpu and memory count there (the API server refuses the rest).
  void read_pod_level(JsonView spec, std::vector<std::string> spec_path) {
    ContainerFacts pod_level;
    pod_level.name = "spec.resources";
    pod_level.path = std::move(spec_path);
    const FieldName where(pod_level.path);
    take(read_resources(policy_, spec, "resources", [&] { return where.text(); }), pod_level);
    default_pod_level_requests(pod_level);
    facts().pod_level = std::move(pod_level);
  }

  // A pod-level limit without a request gets the request the API server
  // defaults it to (pkg/apis/core/v1/defaults.go, defaultPodRequests): the
  // containers' aggregate request when any container asks for the
  // resource, else the limit (which effective_request falls back to).
  void default_pod_level_requests(ContainerFacts& pod_level) {
    const auto request = [](const ContainerFacts& c, std::string_view resource) {
      return c.effective_request(resource);
    };
    const PodRequest sum = pod_request(facts(), 0, request);
    for (const std::string_view resource : {kCpu, kMemory}) {
      if (pod_level.requests.find(resource) || !pod_level.limits.find(resource)) continue;
      const auto asks = [&](const ContainerFacts& c) { return request(c, resource).has_value(); };
      if (std::any_of(facts().app.begin(), facts().app.end(), asks) ||
          std::any_of(facts().init.begin(), facts().init.end(), asks)) {
        pod_level.requests.add(resource, resource == kCpu ? sum.cpu : sum.memory);
      }
    }
  }

  // A container with no pod around it: its resources are under
  // ref.resources_key, and the operator that builds its pod names it.
  void read_container_only() {
    read_container(pod(), target_.ref.path, Role::kApp, nullptr, "", -1, target_.ref.resources_key);
  }

  // A component whose GPU count, CPU and memory are fields of its own, as
  // one container named by its field path (as a container written alone).
  void read_component_fields() {
    ContainerFacts container;
    container.path = target_.ref.path;
    container.fields = target_.ref.fields;
    // Problems about the GPU count name its field.
    container.resources_key = container.fields->gpu;
    const FieldName where(container.path);
    container.name = where.text();
    take(read_component(policy_, pod(), *container.fields, [&] { return where.text(); }), container);
    count_gpus(container, where);
    facts().app.push_back(std::move(container));
  }

  // Argo runs the template's container, script or containerSet as the main
  // containers, sidecars beside them and initContainers before them.
  // templateDefaults are merged under the template's container or script.
  void read_argo_template() {
    const std::string patch = string_member(pod(), "podSpecPatch");
    reading_.spec_patched = target_.ref.workflow_pod_spec_patch || pod().contains("podSpecPatch");
    for (const auto& resource : policy_.gpu_resources) {
      reading_.spec_patch_names_gpu = reading_.spec_patch_names_gpu || patch.find(resource) != std::string::npos;
    }
    // Argo gives the pod the template's resourceClaims, else (none, or an
    // empty list) the workflow's (spec.resourceClaims; argo-workflows
    // examples/resource-claims.yaml): read before the containers' uses.
    const JsonView own = pod()["resourceClaims"];
    claim_uses_.set_pod_claims(own.child("0").is_absent() ? target_.ref.workflow_spec["resourceClaims"] : own);
    for (const char* key : {"container", "script"}) {
      const JsonView item = pod()[key];
      if (item.is_null()) continue;
      const ArgoWorkflow& defaults = workflow();
      read_container(item, absolute({key}), Role::kApp,
                     std::string_view(key) == "container" ? &defaults.container_defaults : &defaults.script_defaults,
                     "main");
    }
    read_list(pod()["containerSet"]["containers"], {"containerSet", "containers"}, Role::kApp);
    read_list(pod()["sidecars"], {"sidecars"}, Role::kApp);
    read_list(pod()["initContainers"], {"initContainers"}, Role::kInit);
    check_volumes_list(pod()["volumes"], {"volumes"});
  }

  // The /dev/shm volume is appended to this list: it must be one.
  void check_volumes_list(JsonView volumes, const std::vector<std::string>& tokens) {
    if (!volumes.is_null() && !volumes.is_array()) problem(ProblemCode::kWrongType, field(tokens), "is not a list");
  }

  void read_list(JsonView list, const std::vector<std::string>& tokens, Role role) {
    if (list.is_null()) return;
    if (!list.is_array()) {
      problem(ProblemCode::kWrongType, field(tokens), "is not a list");
      return;
    }
    int index = 0;
    list.for_each_element([&](JsonView item) {
      std::vector<std::string> path = absolute(tokens);
      path.push_back(std::to_string(index));
      read_container(item, std::move(path), role, nullptr, "", role == Role::kInit ? index : -1);
      ++index;
    });
  }

  // unnamed: the name a container without one gets at run time (Argo calls
  // its main container "main"); empty means its field path. defaults:
  // Argo's templateDefaults for this container, or nullptr.
  void read_container(JsonView item, std::vector<std::string> path, Role role, const ResourcesRead* defaults,
                      std::string_view unnamed, int init_index = -1, std::string_view resources_key = "resources") {
    if (!item.is_object()) {
      problem(ProblemCode::kWrongType, field_path(path), "is not an object");
      return;
    }
    // The fields read here, in one pass over the container's.
    JsonView name, resources, restart_policy, mounts, command, args;
    item.for_each_member([&](std::string_view key, JsonView value) {
      if (key == "name") name = value;
      if (key == resources_key) resources = value;
      if (key == "restartPolicy") restart_policy = value;
      if (key == "volumeMounts") mounts = value;
      if (key == "command") command = value;
      if (key == "args") args = value;
    });
    // Sidecars (init containers that keep running) hold resources alongside
    // the app containers, so they count with them. The facts are written
    // where they are kept: a container's are too large to move cheaply.
    const bool sidecar = role == Role::kInit && restart_policy.string() == "Always";
    ContainerFacts& container = (role == Role::kInit && !sidecar ? facts().init : facts().app).emplace_back();
    container.path = std::move(path);
    container.init_index = init_index;
    container.resources_key = resources_key;
    container.sidecar = sidecar;
    const FieldName where(container.path);
    container.name = name.string();
    if (container.name.empty()) container.name = unnamed.empty() ? where.text() : std::string(unnamed);
    // The template's values win over its defaults, key by key.
    ResourcesRead read =
        read_resources_at(policy_, resources, [&] { return where.text() + "." + container.resources_key; });
    const JsonView claims = read.claims;
    take(std::move(read), container);
    if (defaults) take(*defaults, container);
    count_gpus(container, where);
    if (claims.is_array()) {
      claim_uses_.read(claims, container, where.text() + "." + container.resources_key, role == Role::kApp || sidecar,
                       facts().claim_uses);
    }
    if ((role == Role::kApp || sidecar) && container.gpus > 0) {
      // The /dev/shm mount is appended here: a JSON Patch adds to a list only.
      if (!mounts.is_null() && !mounts.is_array())
        problem(ProblemCode::kWrongType, where.text() + ".volumeMounts", "is not a list");
      container.shm_volume = shm_mount(mounts);
      read_serving_flags(command, args, container);
      if (reads_commands_) facts().selection.commands.push_back(command_line(command, args, kCommandLineBytes));
    }
  }

  // The GPUs the tables count among the container's accelerator asks:
  // gpuResources, then, when it asks for them, the policy's accelerators
  // with sizing gpus. What else it asks for is worked out when said
  // (sizing/accelerator_asks.h).
  void count_gpus(ContainerFacts& container, const FieldName& where) {
    const auto count = [&](std::string_view resource) {
      const int64_t gpus = gpu_count(container, resource, where);
      if (gpus > 0 && container.gpu_resource.empty()) container.gpu_resource = resource;
      container.gpus += gpus;
    };
    for (const std::string& resource : policy_.gpu_resources) count(resource);
    if (container.other_accelerators) count_device_class_resources(container, where);
    if (!container.accelerator_gpus) return;
    std::vector<std::string_view> counted;
    const auto count_once = [&](std::string_view resource, const Quantity&) {
      if (contains(policy_.gpu_resources, resource) || !policy_.is_gpu_resource(resource) ||
          std::find(counted.begin(), counted.end(), resource) != counted.end()) {
        return;
      }
      counted.push_back(resource);
      count(resource);
    };
    container.limits.for_each(count_once);
    container.requests.for_each(count_once);
  }

  // Extended resources a DRA DeviceClass serves (KEP-5004): by the
  // implicit name, or a watched class's extendedResourceName. They are the
  // class's asks; a class counted as GPUs adds to the container's GPUs as
  // a claim's do (no node reports them as allocatable).
  void count_device_class_resources(ContainerFacts& container, const FieldName& where) {
    const ClaimInventory* known = target_.cluster.claims;
    const auto resolve = [&](std::string_view resource, const Quantity&) {
      // Only extended resources (a domain, then a name): a DeviceClass
      // naming cpu or memory would not make them devices.
      if (resource.find('/') == std::string_view::npos) return;
      std::string_view device_class = implicit_device_class(resource);
      if (device_class.empty() && known) {
        const auto found = known->extended_resources.find(resource);
        if (found != known->extended_resources.end()) device_class = found->second;
      }
      if (device_class.empty()) return;
      for (const auto& [seen, of] : container.device_class_resources) {
        if (seen == resource) return;
      }
      // A class the policy does not take for an accelerator leaves the
      // resource the class it was read with (policy `accelerators`).
      const AcceleratorClass* of = policy_.device_class_for(device_class);
      if (!of) of = policy_.accelerator_for(resource);
      if (!of) return;
      container.device_class_resources.emplace_back(resource, of);
      if (of->sizing != AcceleratorSizing::kGpus) return;
      const int64_t gpus = gpu_count(container, resource, where);
      container.gpus += gpus;
      container.claim_gpus += gpus;
    };
    container.limits.for_each(resolve);
    container.requests.for_each(resolve);
  }

  // Adds what was read to the container, each resource's first value kept.
  // By value: a container's own read is moved in, a template's defaults
  // (shared by its containers) are copied.
  void take(ResourcesRead read, ContainerFacts& container) {
    container.requests.add_all(std::move(read.requests));
    container.limits.add_all(std::move(read.limits));
    for (const ResourcesRead::Problem& each : read.problems)
      problem(each.code, each.field, each.what, each.accelerator);
    reading_.unresolved.insert(reading_.unresolved.end(), read.unresolved.begin(), read.unresolved.end());
    reading_.unresolved_gpu = reading_.unresolved_gpu || read.unresolved_gpu;
    container.accelerator_gpus = container.accelerator_gpus || read.accelerator_gpus;
    container.other_accelerators = container.other_accelerators || read.other_accelerators;
  }

  // The Argo template's workflow, as decide_object read it for all of its
  // templates, or read now for this one.
  const ArgoWorkflow& workflow() {
    if (!workflow_) workflow_ = target_.workflow ? target_.workflow : read_argo_workflow(policy_, target_.ref);
    return *workflow_;
  }

  int64_t gpu_count(const ContainerFacts& container, std::string_view resource, const FieldName& field) {
    const Quantity* request = container.requests.find(resource);
    const Quantity* limit = container.limits.find(resource);
    if (!request && !limit) return 0;
    auto where = [&] { return field.text() + "." + container.resources_key; };
    if (request && limit && *request != *limit) {
      problem(ProblemCode::kInconsistent, where(),
              std::string(resource) + " request " + request->to_string() + " and limit " + limit->to_string() +
                  " differ; GPUs are not overcommitted: set both to the same number",
              true);
      return 0;
    }
    // "Limit must be set for non overcommitable resources", unless a
    // LimitRange or the pod's operator sets it: said, counted as asked.
    // Native names (no domain, kubernetes.io: DRA's) may be requested alone.
    const bool native =
        resource.find('/') == std::string_view::npos || resource.find("kubernetes.io/") != std::string_view::npos;
    if (request && !limit && !native && !request->is_zero()) {
      reading_.notes.push_back(fit(target_.context.description + ": set " + where() + ".limits." +
                                   std::string(resource) + ": " + request->to_string() +
                                   " (a GPU request alone is refused unless a LimitRange sets the limit)"));
    }
    const Quantity& count = limit ? *limit : *request;
    if (!count.is_whole()) {
      problem(ProblemCode::kBadValue, where(),
              std::string(resource) + " must be a whole number of GPUs, found " + count.to_string(), true);
      return 0;
    }
    if (count.value_ceil() > kMaxGpusPerContainer) {
      problem(ProblemCode::kTooLarge, where(),
              std::string(resource) + " asks for " + count.to_string() + " GPUs, more than any node has", true);
      return 0;
    }
    return count.value_ceil();
  }

  const Policy& policy_;
  const PodTarget& target_;
  const bool reads_commands_ = selection_reads(policy_, ProfileRule::Subject::kCommand, {});
  PodReading reading_;
  std::shared_ptr<const ArgoWorkflow> workflow_;
  ClaimUses claim_uses_{policy_, target_.cluster.claims, target_.namespace_name};
};

}  // namespace

PodReading read_pod(const Policy& policy, const PodTarget& target) { return PodReader(policy, target).read(); }

}  // namespace gpusizer
