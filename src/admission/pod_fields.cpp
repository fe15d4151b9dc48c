#include "gpusizer/admission/pod_fields.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "gpusizer/nodes/node_reader.h"
#include "gpusizer/sizing/data_loader.h"
#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/sizing/node_fit_settings.h"
#include "gpusizer/util/contract.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

Result<Quantity> quantity_from_json(JsonView value) {
  if (value.is_string()) return Quantity::parse(value.string());
  if (value.is_number()) return Quantity::parse(value.text());
  return Status::failure(ProblemCode::kWrongType, "",
                         "must be a quantity such as \"64Gi\" or 4, found " + std::string(value.type_name()));
}

namespace {

using StringMap = std::map<std::string, std::string, std::less<>>;

// An expression filled in before the object is applied or while it runs:
// Argo's {{inputs.parameters.gpus}}, Kubernetes' $(VAR), and ${VAR} of
// OpenShift Template parameters, envsubst and Flux's post-build
// substitution.
bool is_unresolved(JsonView value) {
  const std::string_view text = value.string();
  return text.find("{{") != std::string_view::npos || text.find("$(") != std::string_view::npos ||
         text.find("${") != std::string_view::npos;
}

// Adds the string members of object whose key is wanted and that map
// lacks: earlier sources win.
void add_strings(JsonView object, StringMap& map, auto wanted) {
  object.for_each_member([&](std::string_view key, JsonView value) {
    if (value.is_string() && wanted(key) && !map.contains(key)) map.emplace(key, value.string());
  });
}

void read_tolerations(JsonView tolerations, std::vector<Toleration>& out) {
  tolerations.for_each_element([&](JsonView item) {
    Toleration toleration;
    toleration.key = string_member(item, "key");
    toleration.exists = item["operator"].string() == "Exists";
    toleration.value = string_member(item, "value");
    if (item["effect"].is_string()) toleration.effect = string_member(item, "effect");
    out.push_back(std::move(toleration));
  });
}

// resources.<key> (requests or limits), given as `map`.
void read_quantities(const Policy& policy, JsonView map, std::string_view key,
                     const std::function<std::string()>& resources_field, Quantities& out, ResourcesRead& read) {
  if (map.is_null()) return;
  // Made once: a container has a few resources, a review thousands.
  const std::function<std::string()> map_field = [&] { return resources_field() + "." + std::string(key); };
  if (!map.is_object()) {
    read.problems.push_back({ProblemCode::kWrongType, map_field(), "is not an object"});
    return;
  }
  map.for_each_member([&](std::string_view resource, JsonView value) {
    read_resource_quantity(policy, resource, value, map_field, resource, out, read);
  });
}

}  // namespace

void read_resource_quantity(const Policy& policy, std::string_view resource, JsonView value,
                            const std::function<std::string()>& parent, std::string_view key, Quantities& out,
                            ResourcesRead& read) {
  const auto field = [&] { return parent() + "." + std::string(key); };
  const bool sized = resource == kCpu || resource == kMemory || resource == kEphemeralStorage;
  const AcceleratorClass* accelerator = sized ? nullptr : policy.accelerator_for(resource);
  if (!sized && !accelerator) return;
  const bool gpu = accelerator && accelerator->sizing == AcceleratorSizing::kGpus;
  if (gpu && !contains(policy.gpu_resources, resource)) read.accelerator_gpus = true;
  // Accelerators the tables do not count are read for what they say.
  if (accelerator && !gpu) read.other_accelerators = true;
  auto quantity = quantity_from_json(value);
  if (!quantity && is_unresolved(value)) {
    // A template parameter, filled in when the workflow runs: not an
    // error, but nothing to decide on until the Pod exists.
    read.unresolved.push_back(std::string(resource) + " is " + in_quotes(value.string()));
    read.unresolved_gpu = read.unresolved_gpu || gpu;
  } else if (!quantity) {
    // A GPU or another accelerator the API server would refuse: said, even
    // when nothing else in the pod asks for GPUs.
    read.problems.push_back({quantity.problem().code, field(), quantity.error(), accelerator != nullptr});
  } else if (quantity.value().is_negative()) {
    read.problems.push_back({ProblemCode::kBadValue, field(),
                             "must not be negative, found " + quantity.value().to_string(), accelerator != nullptr});
  } else {
    out.add(resource, quantity.value());
  }
}

JsonView controlling_owner(JsonView owners) {
  JsonView first;
  JsonView controller;
  owners.for_each_element([&](JsonView owner) {
    if (string_member(owner, "kind").empty()) return;
    if (first.is_absent()) first = owner;
    if (controller.is_absent() && owner["controller"].is_true()) controller = owner;
  });
  return controller.is_absent() ? first : controller;
}

std::string controller_kind(JsonView owners) { return string_member(controlling_owner(owners), "kind"); }

std::string shm_mount(JsonView mounts) {
  std::string volume;
  mounts.for_each_element([&](JsonView mount) {
    const std::string_view path = mount["mountPath"].string();
    if (volume.empty() && (path == "/dev/shm" || path == "/dev/shm/")) volume = string_member(mount, "name");
  });
  return volume;
}

void read_volume_list(JsonView list, std::vector<std::string> path, PodFacts& facts) {
  const std::size_t list_index = facts.volume_lists.size();
  facts.volume_lists.push_back(std::move(path));
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
    facts.volumes.push_back(std::move(read));
  });
}

void read_scheduling(const Policy& policy, JsonView spec, PodFacts& facts) {
  add_strings(spec["nodeSelector"], facts.node_selector, [](std::string_view) { return true; });
  if (facts.node_name.empty()) facts.node_name = string_member(spec, "nodeName");
  if (facts.tolerations.empty()) read_tolerations(spec["tolerations"], facts.tolerations);
  const JsonView terms =
      spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  if (facts.has_affinity || !terms.is_array()) return;
  facts.has_affinity = true;
  terms.for_each_element([&](JsonView term) {
    NodeSelectorTerm read;
    for (const auto& list : {std::pair{"matchExpressions", false}, std::pair{"matchFields", true}}) {
      const bool field = list.second;  // a lambda cannot capture a structured binding in C++20
      term[list.first].for_each_element([&](JsonView expression) {
        if (auto requirement = read_node_requirement(expression, field))
          read.requirements.push_back(std::move(*requirement));
      });
    }
    facts.affinity_terms.push_back(std::move(read));
  });
  // Terms are ORed: the products are known only when every term names them.
  std::vector<std::string> products;
  bool every_term = !facts.affinity_terms.empty();
  for (const NodeSelectorTerm& term : facts.affinity_terms) {
    bool names_product = false;
    for (const NodeRequirement& requirement : term.requirements) {
      if (requirement.field || requirement.key != policy.rule_settings.get<GpuMemoryPolicy>().product_label ||
          requirement.op != NodeRequirement::Op::kIn) {
        continue;
      }
      names_product = true;
      products.insert(products.end(), requirement.values.begin(), requirement.values.end());
    }
    every_term = every_term && names_product;
  }
  if (every_term) facts.affinity_products = std::move(products);
}

ResourcesRead read_resources(const Policy& policy, JsonView item, const std::string& resources_key,
                             const std::function<std::string()>& field) {
  return read_resources_at(policy, item[resources_key], [&] { return field() + "." + resources_key; });
}

ResourcesRead read_resources_at(const Policy& policy, JsonView resources,
                                const std::function<std::string()>& resources_field) {
  ResourcesRead read;
  if (resources.is_null()) return read;
  if (!resources.is_object()) {
    read.problems.push_back({ProblemCode::kWrongType, resources_field(), "is not an object"});
    return read;
  }
  JsonView requests, limits;
  resources.for_each_member([&](std::string_view key, JsonView value) {
    if (key == "requests") requests = value;
    if (key == "limits") limits = value;
    if (key == "claims") read.claims = value;
  });
  read_quantities(policy, requests, "requests", resources_field, read.requests, read);
  read_quantities(policy, limits, "limits", resources_field, read.limits, read);
  return read;
}

void read_wanted_metadata(const Policy& policy, JsonView metadata, bool pod_keys, SelectionMaps maps) {
  // Only the labels and annotations the decision reads are copied: one
  // last-applied-configuration annotation can be most of a review.
  auto wanted_label = [&](std::string_view key) {
    return key == policy.rule_settings.get<NodeFitPolicy>().pool_label || key == kOsmoGroupLabel ||
           selection_reads(policy, ProfileRule::Subject::kLabel, key);
  };
  // The data loader, model and GPU describe one pod.
  auto describes_the_pod = [](std::string_view key) {
    return key == kDataLoaderKey || key == kModelKey || key == kGpuKey;
  };
  const auto asks_accelerator = [&](std::string_view key) {
    return std::any_of(policy.accelerator_annotations.begin(), policy.accelerator_annotations.end(),
                       [&](const AcceleratorClass& each) { return each.annotation == key; });
  };
  auto wanted_annotation = [&](std::string_view key) {
    return key == kMutateOptOutKey || (pod_keys && asks_accelerator(key)) ||
           (describes_the_pod(key) ? pod_keys : selection_reads(policy, ProfileRule::Subject::kAnnotation, key));
  };
  add_strings(metadata["annotations"], maps.annotations, wanted_annotation);
  add_strings(metadata["labels"], maps.labels, wanted_label);
  for (const char* key : {"name", "generateName"}) {
    if (maps.name.empty()) maps.name = string_member(metadata, key);
  }
}

std::shared_ptr<const InheritedSelection> read_inherited_selection(const Policy& policy, JsonView metadata,
                                                                   bool own_metadata) {
  InheritedSelection selection;
  // A pod spec or container written without metadata (KServe, NIMService,
  // TrainJob) has the object's data loader, model and GPU: its operator
  // copies them to the pods it makes. An Argo workflow's do not reach its
  // templates' Pods.
  read_wanted_metadata(policy, metadata, !own_metadata, {selection.labels, selection.annotations, selection.name});
  return inherit_selection(policy, std::move(selection));
}

std::shared_ptr<const ArgoWorkflow> read_argo_workflow(const Policy& policy, const PodTemplateRef& ref) {
  GPU_SIZER_REQUIRE(ref.shape == PodShape::kArgoTemplate);
  PodFacts spec;
  std::vector<std::string> volumes_path = ref.workflow_spec_path;
  volumes_path.push_back("volumes");
  // Its volumes are each template's second list: the template's own come first.
  spec.volume_lists.emplace_back();
  read_volume_list(ref.workflow_spec["volumes"], std::move(volumes_path), spec);
  read_scheduling(policy, ref.workflow_spec, spec);
  auto workflow = std::make_shared<ArgoWorkflow>();
  workflow->fields = std::make_shared<const WorkflowFields>(std::move(spec));
  for (const char* key : {"container", "script"}) {
    const JsonView defaults = ref.template_defaults[key];
    if (!defaults.is_object()) continue;
    (std::string_view(key) == "container" ? workflow->container_defaults : workflow->script_defaults) =
        read_resources(policy, defaults, "resources", [&] { return std::string("templateDefaults.") + key; });
  }
  return workflow;
}

}  // namespace gpusizer
