#include "gpusizer/admission/pod_reader.h"

#include <algorithm>

#include "gpusizer/admission/serving_flags.h"
#include "gpusizer/sizing/data_loader.h"
#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

Result<Quantity> quantity_from_json(JsonView value) {
  if (value.is_string()) return Quantity::parse(value.string());
  if (value.is_number()) return Quantity::parse(value.text());
  return Status::invalid_argument("must be a quantity such as \"64Gi\" or 4, found " + std::string(value.type_name()));
}

namespace {

// More GPUs than this in one container is a typo, not a machine; refusing
// it keeps all arithmetic far from overflow.
constexpr int64_t kMaxGpusPerContainer = 1 << 20;

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

bool is_unresolved(JsonView value) {
  const std::string_view text = value.string();
  return text.find("{{") != std::string_view::npos || text.find("$(") != std::string_view::npos;
}

// Adds the string members of object whose key is wanted and that map
// lacks: earlier sources win.
void add_strings(JsonView object, std::map<std::string, std::string, std::less<>>& map, auto wanted) {
  object.for_each_member([&](std::string_view key, JsonView value) {
    if (value.is_string() && wanted(key) && !map.contains(key)) map.emplace(key, value.string());
  });
}

class PodReader {
 public:
  PodReader(const Policy& policy, const PodTarget& target) : policy_(policy), target_(target) {
    PodFacts& facts = reading_.facts;
    facts.description = target.description;
    facts.label = target.label;
    facts.mode = target.mode;
    facts.sized_at_creation = target.sized_at_creation;
    facts.found_by_shape = target.found_by_shape;
    facts.tolerations_final = target.tolerations_final;
  }

  PodReading read() {
    read_selection();
    switch (target_.ref.shape) {
      case PodShape::kArgoTemplate: read_argo_template(); break;
      case PodShape::kPod: read_pod_spec(pod()["spec"], {"spec"}); break;
      case PodShape::kPodSpec: read_pod_spec(pod(), {}); break;
      case PodShape::kContainer: read_container_only(); break;
    }
    // Volumes and where the pod may run matter only to the rules of GPU pods.
    const auto holds_gpus = [](const std::vector<ContainerFacts>& list) {
      return std::any_of(list.begin(), list.end(), [](const ContainerFacts& c) { return c.gpus > 0; });
    };
    if (holds_gpus(facts().app) || holds_gpus(facts().init)) {
      switch (target_.ref.shape) {
        case PodShape::kArgoTemplate: {
          read_volumes(pod()["volumes"], absolute({"volumes"}));
          std::vector<std::string> workflow = target_.ref.workflow_spec_path;
          workflow.push_back("volumes");
          read_volumes(target_.ref.workflow_spec["volumes"], std::move(workflow));
          read_scheduling(pod());
          read_scheduling(target_.ref.workflow_spec);
          break;
        }
        case PodShape::kPod:
          read_volumes(pod()["spec"]["volumes"], absolute({"spec", "volumes"}));
          read_scheduling(pod()["spec"]);
          break;
        case PodShape::kPodSpec:
          read_volumes(pod()["volumes"], absolute({"volumes"}));
          read_scheduling(pod());
          break;
        case PodShape::kContainer:
          // The operator builds the pod and its volumes: none to add to.
          read_scheduling(target_.ref.scheduling);
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

  void problem(const std::string& field, const std::string& what, bool gpu_field = false) {
    reading_.problems.push_back(target_.description + ": " + field + " " + what);
    reading_.gpu_problem = reading_.gpu_problem || gpu_field;
  }

  // The template's own labels and annotations first, then the object's.
  void read_selection() {
    const JsonView metadata = pod()["metadata"];
    // The sized annotation is added into these maps: a JSON Patch cannot add
    // a key under any other type (nor is it pod metadata).
    if (!metadata.is_null() && !metadata.is_object()) {
      problem(field({"metadata"}), "is not an object");
    } else if (const JsonView annotations = metadata["annotations"];
               !annotations.is_null() && !annotations.is_object()) {
      problem(field({"metadata", "annotations"}), "is not an object");
    }
    // Only the labels and annotations the decision reads are copied: one
    // last-applied-configuration annotation can be most of a review.
    auto wanted_label = [&](std::string_view key) {
      return key == policy_.node_fit.pool_label || selection_reads(policy_, ProfileRule::Subject::kLabel, key);
    };
    // The data loader, model and GPU describe one pod: they are read from
    // its own metadata only, as the Pods a workload creates carry them
    // (an Argo workflow's annotations do not reach its Pods). A pod spec or
    // container written without metadata (KServe, NIMService, TrainJob)
    // has the object's: its operator copies them to the pods it makes.
    const bool own_metadata = has_own_metadata(target_.ref.shape);
    auto describes_the_pod = [](std::string_view key) {
      return key == kDataLoaderKey || key == kModelKey || key == kGpuKey;
    };
    auto wanted_annotation = [&](std::string_view key) {
      return key == kMutateOptOutKey || describes_the_pod(key) ||
             selection_reads(policy_, ProfileRule::Subject::kAnnotation, key);
    };
    auto wanted_parent_annotation = [&](std::string_view key) {
      return (!own_metadata || !describes_the_pod(key)) && wanted_annotation(key);
    };
    SelectionInput& selection = facts().selection;
    add_strings(metadata["annotations"], selection.annotations, wanted_annotation);
    add_strings(target_.parent_metadata["annotations"], selection.annotations, wanted_parent_annotation);
    for (const JsonView source : {metadata, target_.parent_metadata}) {
      add_strings(source["labels"], selection.labels, wanted_label);
      for (const char* key : {"name", "generateName"}) {
        if (selection.name.empty()) selection.name = string_member(source, key);
      }
    }
    selection.template_name = target_.ref.template_name;
    selection.replica_type = target_.ref.replica_type;
    selection.kind = target_.kind;
    selection.owner_kind = controller_kind(metadata["ownerReferences"]);
    const std::string* opt_out = facts().annotation(kMutateOptOutKey);
    facts().opted_out = opt_out && *opt_out == "false";
  }

  // The kind of the owner that controls a Pod (controller: true), else of
  // its first owner; empty for a template (whose metadata has no owners).
  static std::string controller_kind(JsonView owners) {
    std::string first;
    std::string controller;
    owners.for_each_element([&](JsonView owner) {
      if (first.empty()) first = string_member(owner, "kind");
      if (controller.empty() && owner["controller"].is_true()) controller = string_member(owner, "kind");
    });
    return controller.empty() ? first : controller;
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
      problem(field_path(absolute(tokens)), "is missing or not an object");
      return;
    }
    const JsonView containers = spec["containers"];
    if (!containers.is_array()) {
      problem(field_path(absolute(below("containers"))), "is missing or not a list");
      return;
    }
    read_list(containers, below("containers"), Role::kApp);
    read_list(spec["initContainers"], below("initContainers"), Role::kInit);
    check_volumes_list(spec["volumes"], below("volumes"));
  }

  // A container with no pod around it: its resources are under
  // ref.resources_key, and the operator that builds its pod names it.
  void read_container_only() {
    read_container(pod(), target_.ref.path, Role::kApp, JsonView(), "", "", -1, target_.ref.resources_key);
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
    for (const char* key : {"container", "script"}) {
      const JsonView item = pod()[key];
      if (item.is_null()) continue;
      read_container(item, absolute({key}), Role::kApp, target_.ref.template_defaults[key],
                     std::string("templateDefaults.") + key, "main");
    }
    read_list(pod()["containerSet"]["containers"], {"containerSet", "containers"}, Role::kApp);
    read_list(pod()["sidecars"], {"sidecars"}, Role::kApp);
    read_list(pod()["initContainers"], {"initContainers"}, Role::kInit);
    check_volumes_list(pod()["volumes"], {"volumes"});
  }

  // The /dev/shm volume is appended to this list: it must be one.
  void check_volumes_list(JsonView volumes, const std::vector<std::string>& tokens) {
    if (!volumes.is_null() && !volumes.is_array()) problem(field(tokens), "is not a list");
  }

  // The volumes of one list: their names, and the size of the memory-backed
  // ones (a sizeLimit that does not parse is the /dev/shm rule's problem,
  // when it reads that volume).
  void read_volumes(JsonView list, std::vector<std::string> path) {
    const std::size_t list_index = facts().volume_lists.size();
    facts().volume_lists.push_back(std::move(path));
    std::size_t index = 0;
    list.for_each_element([&](JsonView volume) {
      VolumeFacts read{volume["name"].string(), list_index, index++};
      const JsonView empty_dir = volume["emptyDir"];
      read.memory_backed = empty_dir.is_object() && empty_dir["medium"].string() == "Memory";
      const JsonView size_limit = read.memory_backed ? empty_dir["sizeLimit"] : JsonView();
      if (!size_limit.is_null()) {
        auto size = quantity_from_json(size_limit);
        if (size) {
          read.size_limit = size.value();
        } else {
          read.size_limit_error = size.error();
        }
      }
      facts().volumes.push_back(std::move(read));
    });
  }

  // Where the pod may run: its nodeSelector entries, its required node
  // affinity, tolerations and nodeName, and the GPU products the affinity
  // allows. An earlier source (an Argo template) wins over a later one
  // (its workflow): key by key for the nodeSelector, as a whole for the rest.
  void read_scheduling(JsonView spec) {
    add_strings(spec["nodeSelector"], facts().node_selector, [](std::string_view) { return true; });
    if (facts().node_name.empty()) facts().node_name = string_member(spec, "nodeName");
    if (facts().tolerations.empty()) read_tolerations(spec["tolerations"]);
    const JsonView terms =
        spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    if (facts().has_affinity || !terms.is_array()) return;
    facts().has_affinity = true;
    terms.for_each_element([&](JsonView term) {
      NodeSelectorTerm read;
      for (const auto& list : {std::pair{"matchExpressions", false}, std::pair{"matchFields", true}}) {
        const bool field = list.second;  // a lambda cannot capture a structured binding in C++20
        term[list.first].for_each_element([&](JsonView expression) {
          if (auto requirement = read_requirement(expression, field))
            read.requirements.push_back(std::move(*requirement));
        });
      }
      facts().affinity_terms.push_back(std::move(read));
    });
    // Terms are ORed: the products are known only when every term names them.
    std::vector<std::string> products;
    bool every_term = !facts().affinity_terms.empty();
    for (const NodeSelectorTerm& term : facts().affinity_terms) {
      bool names_product = false;
      for (const NodeRequirement& requirement : term.requirements) {
        if (requirement.field || requirement.key != policy_.gpu_memory.product_label ||
            requirement.op != NodeRequirement::Op::kIn) {
          continue;
        }
        names_product = true;
        products.insert(products.end(), requirement.values.begin(), requirement.values.end());
      }
      every_term = every_term && names_product;
    }
    if (every_term) facts().affinity_products = std::move(products);
  }

  // One matchExpressions (or matchFields) entry; nullopt for an operator the
  // API server would refuse, which then does not narrow the nodes.
  static std::optional<NodeRequirement> read_requirement(JsonView expression, bool field) {
    static constexpr std::pair<std::string_view, NodeRequirement::Op> kOps[] = {
        {"In", NodeRequirement::Op::kIn},         {"NotIn", NodeRequirement::Op::kNotIn},
        {"Exists", NodeRequirement::Op::kExists}, {"DoesNotExist", NodeRequirement::Op::kDoesNotExist},
        {"Gt", NodeRequirement::Op::kGt},         {"Lt", NodeRequirement::Op::kLt}};
    const std::string_view op = expression["operator"].string();
    const auto* found =
        std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& entry) { return entry.first == op; });
    if (found == std::end(kOps)) return std::nullopt;
    NodeRequirement requirement{string_member(expression, "key"), found->second, {}, field};
    expression["values"].for_each_element([&](JsonView value) {
      if (value.is_string()) requirement.values.emplace_back(value.string());
    });
    return requirement;
  }

  void read_tolerations(JsonView tolerations) {
    tolerations.for_each_element([&](JsonView item) {
      Toleration toleration;
      toleration.key = string_member(item, "key");
      toleration.exists = item["operator"].string() == "Exists";
      toleration.value = string_member(item, "value");
      if (item["effect"].is_string()) toleration.effect = string_member(item, "effect");
      facts().tolerations.push_back(std::move(toleration));
    });
  }

  void read_list(JsonView list, const std::vector<std::string>& tokens, Role role) {
    if (list.is_null()) return;
    if (!list.is_array()) {
      problem(field(tokens), "is not a list");
      return;
    }
    int index = 0;
    list.for_each_element([&](JsonView item) {
      std::vector<std::string> path = absolute(tokens);
      path.push_back(std::to_string(index));
      read_container(item, std::move(path), role, JsonView(), "", "", role == Role::kInit ? index : -1);
      ++index;
    });
  }

  // unnamed: the name a container without one gets at run time (Argo calls
  // its main container "main"); empty means its field path. defaults:
  // Argo's templateDefaults for this container, or absent.
  void read_container(JsonView item, std::vector<std::string> path, Role role, JsonView defaults,
                      const std::string& defaults_field, const std::string& unnamed, int init_index = -1,
                      const std::string& resources_key = "resources") {
    if (!item.is_object()) {
      problem(field_path(path), "is not an object");
      return;
    }
    ContainerFacts container;
    container.path = std::move(path);
    container.init_index = init_index;
    container.resources_key = resources_key;
    const FieldName where(container.path);
    container.name = string_member(item, "name");
    if (container.name.empty()) container.name = unnamed.empty() ? where.text() : unnamed;
    // The template's values win over its defaults, key by key.
    read_resources(item, where, container);
    if (defaults.is_object()) read_resources(defaults, FieldName(defaults_field), container);
    for (const auto& resource : policy_.gpu_resources) {
      const int64_t count = gpu_count(container, resource, where);
      if (count > 0 && container.gpu_resource.empty()) container.gpu_resource = resource;
      container.gpus += count;
    }
    // Sidecars (init containers that keep running) hold resources alongside
    // the app containers, so they count with them.
    const bool sidecar = role == Role::kInit && item["restartPolicy"].string() == "Always";
    container.sidecar = sidecar;
    if ((role == Role::kApp || sidecar) && container.gpus > 0) {
      // The /dev/shm mount is appended here: a JSON Patch adds to a list only.
      const JsonView mounts = item["volumeMounts"];
      if (!mounts.is_null() && !mounts.is_array()) problem(where.text() + ".volumeMounts", "is not a list");
      container.shm_volume = shm_mount(item);
      read_serving_flags(item, container);
    }
    (role == Role::kInit && !sidecar ? facts().init : facts().app).push_back(std::move(container));
  }

  // The volume a container mounts at /dev/shm, or empty.
  static std::string shm_mount(JsonView item) {
    std::string volume;
    item["volumeMounts"].for_each_element([&](JsonView mount) {
      const std::string_view path = mount["mountPath"].string();
      if (volume.empty() && (path == "/dev/shm" || path == "/dev/shm/")) volume = string_member(mount, "name");
    });
    return volume;
  }

  void read_resources(JsonView item, const FieldName& field, ContainerFacts& container) {
    const JsonView resources = item[container.resources_key];
    if (resources.is_null()) return;
    const std::string resources_field = field.text() + "." + container.resources_key;
    if (!resources.is_object()) {
      problem(resources_field, "is not an object");
      return;
    }
    read_quantities(resources, "requests", resources_field, container.requests);
    read_quantities(resources, "limits", resources_field, container.limits);
  }

  void read_quantities(JsonView resources, std::string_view key, const std::string& resources_field, Quantities& out) {
    const JsonView map = resources[key];
    if (map.is_null()) return;
    auto map_field = [&] { return resources_field + "." + std::string(key); };
    if (!map.is_object()) {
      problem(map_field(), "is not an object");
      return;
    }
    map.for_each_member([&](std::string_view resource, JsonView value) {
      const bool gpu = policy_.is_gpu_resource(resource);
      if (!gpu && resource != kCpu && resource != kMemory && resource != kEphemeralStorage) return;
      auto quantity = quantity_from_json(value);
      if (!quantity && is_unresolved(value)) {
        // A template parameter, filled in when the workflow runs: not an
        // error, but nothing to decide on until the Pod exists.
        reading_.unresolved.push_back(std::string(resource) + " is " + in_quotes(value.string()));
        reading_.unresolved_gpu = reading_.unresolved_gpu || gpu;
      } else if (!quantity) {
        problem(map_field() + "." + std::string(resource), quantity.error(), gpu);
      } else if (quantity.value().is_negative()) {
        problem(map_field() + "." + std::string(resource),
                "must not be negative, found " + quantity.value().to_string(), gpu);
      } else {
        out.add(resource, quantity.value());  // keeps an earlier (template) value over a default
      }
    });
  }

  int64_t gpu_count(const ContainerFacts& container, const std::string& resource, const FieldName& field) {
    const Quantity* request = container.requests.find(resource);
    const Quantity* limit = container.limits.find(resource);
    if (!request && !limit) return 0;
    auto where = [&] { return field.text() + "." + container.resources_key; };
    if (request && limit && *request != *limit) {
      problem(where(),
              resource + " request " + request->to_string() + " and limit " + limit->to_string() +
                  " differ; GPUs are not overcommitted: set both to the same number",
              true);
      return 0;
    }
    const Quantity& count = limit ? *limit : *request;
    if (!count.is_whole()) {
      problem(where(), resource + " must be a whole number of GPUs, found " + count.to_string(), true);
      return 0;
    }
    if (count.value_ceil() > kMaxGpusPerContainer) {
      problem(where(), resource + " asks for " + count.to_string() + " GPUs, more than any node has", true);
      return 0;
    }
    return count.value_ceil();
  }

  const Policy& policy_;
  const PodTarget& target_;
  PodReading reading_;
};

}  // namespace

PodReading read_pod(const Policy& policy, const PodTarget& target) { return PodReader(policy, target).read(); }

}  // namespace gpusizer
