#include "gpusizer/workloads/workloads.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <tuple>

#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

const WorkloadKind* find_in(const std::vector<WorkloadKind>& table, std::string_view group, std::string_view kind) {
  auto it = std::find_if(table.begin(), table.end(),
                         [&](const WorkloadKind& e) { return e.group == group && e.kind == kind; });
  return it == table.end() ? nullptr : &*it;
}

std::string name_of(JsonView element) {
  for (const char* key : {"name", "groupName"}) {
    if (element[key].is_string()) return std::string(element[key].string());
  }
  return "";
}

// Calls visit(element) for each element of `array`, with its index on
// `path` for the call.
template <typename Visit>
void for_each_indexed(JsonView array, std::vector<std::string>& path, Visit&& visit) {
  std::size_t index = 0;
  array.for_each_element([&](JsonView element) {
    path.push_back(std::to_string(index++));
    visit(element);
    path.pop_back();
  });
}

// An object's own metadata and status: they report, and hold no pods nor
// GPU asks.
bool reports_only(std::string_view root_key) { return root_key == "status" || root_key == "metadata"; }

// Argo templates that run a pod; steps, dag, resource, suspend and the rest
// run none.
bool runs_pod(JsonView argo_template) {
  return argo_template.contains("container") || argo_template.contains("script") ||
         argo_template.contains("containerSet");
}

class Walker {
 public:
  Walker(const TemplateLocation& location, std::vector<PodTemplateRef>& out) : location_(location), out_(out) {}

  void walk(JsonView node, const std::vector<std::string_view>& parts, std::size_t index,
            std::vector<std::string>& path, const std::string& name) {
    if (index == parts.size()) {
      emit(node, path, name);
      return;
    }
    if (!node.is_object()) return;
    objects_.push_back(node);
    const std::string_view part = parts[index];
    if (part == "*") {
      for (const auto& [key, value] : node.members()) {
        path.emplace_back(key);
        walk(value, parts, index + 1, path, std::string(key));
        path.pop_back();
      }
    } else {
      walk_key(node, part, parts, index, path, name);
    }
    objects_.pop_back();
  }

 private:
  void walk_key(JsonView node, std::string_view part, const std::vector<std::string_view>& parts, std::size_t index,
                std::vector<std::string>& path, const std::string& name) {
    const bool each = part.ends_with("[]");
    const std::string_view key = each ? part.substr(0, part.size() - 2) : part;
    const JsonView child = node[key];
    if (child.is_absent()) return;
    path.emplace_back(key);
    if (!each) {
      walk(child, parts, index + 1, path, name);
    } else if (child.is_array()) {
      if (location_.shape == PodShape::kArgoTemplate) enter_argo_spec(node, {path.begin(), path.end() - 1});
      for_each_indexed(child, path, [&](JsonView item) { walk(item, parts, index + 1, path, name_of(item)); });
    }
    path.pop_back();
  }

  // The workflow spec around Argo's templates carries defaults and a
  // podSpecPatch that apply to every template.
  void enter_argo_spec(JsonView spec, std::vector<std::string> spec_path) {
    workflow_spec_ = spec;
    workflow_spec_path_ = std::move(spec_path);
    template_defaults_ = spec["templateDefaults"].is_object() ? spec["templateDefaults"] : JsonView();
    pod_spec_patch_ = spec.contains("podSpecPatch");
  }

  void emit(JsonView node, const std::vector<std::string>& path, const std::string& name) {
    PodTemplateRef ref;
    ref.pod = node;
    ref.shape = location_.shape;
    ref.path = path;
    switch (location_.shape) {
      case PodShape::kArgoTemplate:
        if (!runs_pod(node)) return;
        ref.template_name = name;
        ref.template_defaults = template_defaults_;
        ref.workflow_spec = workflow_spec_;
        ref.workflow_spec_path = workflow_spec_path_;
        ref.workflow_pod_spec_patch = pod_spec_patch_;
        break;
      case PodShape::kPodSpec:
        // A KServe component written as a model block has no containers.
        if (!node.contains("containers")) return;
        ref.replica_type = name;
        break;
      case PodShape::kContainer: {
        ref.replica_type = name;
        ref.resources_key = location_.resources_key;
        const int up = location_.scheduling_up;
        if (up == 0) ref.scheduling = node;
        if (up > 0 && static_cast<std::size_t>(up) <= objects_.size()) ref.scheduling = objects_[objects_.size() - up];
        break;
      }
      case PodShape::kFields:
        ref.replica_type = name;
        ref.fields = &location_.fields;
        break;
      case PodShape::kPod: ref.replica_type = name; break;
    }
    out_.push_back(std::move(ref));
  }

  const TemplateLocation& location_;
  std::vector<PodTemplateRef>& out_;
  std::vector<JsonView> objects_;  // the objects from the root to the node walked
  JsonView workflow_spec_;
  std::vector<std::string> workflow_spec_path_;
  JsonView template_defaults_;
  bool pod_spec_patch_ = false;
};

// Paths as a tree of their tokens, walked down beside a walk of the
// object: whether the walk is at one of thousands of paths (a workflow's
// templates) costs a lookup per step, not a comparison with each path.
class PathTree {
 public:
  void add(const std::vector<std::string>& path) {
    PathTree* node = this;
    for (const std::string& token : path) node = &node->children_[token];
    node->end_ = true;
  }
  // The subtree below token, or nullptr when no path goes there.
  const PathTree* below(std::string_view token) const {
    const auto found = children_.find(token);
    return found == children_.end() ? nullptr : &found->second;
  }
  bool ends_here() const { return end_; }

 private:
  std::map<std::string, PathTree, std::less<>> children_;
  bool end_ = false;
};

// Fields named for GPUs that describe machines, not an ask: NVIDIA
// Dynamo's DynamoGraphDeploymentRequest.spec.hardware (numGpusPerNode,
// totalGpus: "typically auto-filled by the operator from cluster
// discovery", deploy/operator/api/v1beta1/dynamographdeploymentrequest_types.go
// @57040c1), and a GKE ComputeClass's machine choices (spec.priorities[].gpu
// {type, count}, cloud.google.com/v1; GKE's ComputeClass CRD reference).
struct HardwareDescription {
  std::string_view group, kind, path;
};
constexpr HardwareDescription kHardwareDescriptions[] = {
    {"nvidia.com", "DynamoGraphDeploymentRequest", "spec.hardware"},
    {"cloud.google.com", "ComputeClass", "spec.priorities"},
};

// Whether `text` is made of these words only ("pernode": per, node).
bool made_of_count_words(std::string_view text) {
  static constexpr std::string_view kWords[] = {
      "number",  "num", "n",        "of",      "count",     "total",    "per",   "node",     "worker", "task",
      "replica", "pod", "instance", "request", "requested", "required", "limit", "quantity", "amount"};
  if (text.empty()) return true;
  for (const std::string_view word : kWords) {
    if (text.starts_with(word) && made_of_count_words(text.substr(word.size()))) return true;
  }
  return false;
}

// A field named for a GPU count: gpu, gpus, numGpus, gpuCount,
// numGpusPerNode, num-gpus, nGPU, requestGPU... (a GPU word with count
// words around it); not gpuType, gpuMemoryUtilization or entrypointNumGpus.
// Dots are read as '-' and '_' are (gpu.count), and a key of more parts by
// its last two: Spark's spark.executor.resource.gpu.amount, not
// ...gpu.discoveryScript.
bool names_gpu_count(std::string_view key) {
  if (const auto last = key.rfind('.'); last != std::string_view::npos && last > 0) {
    const auto before = key.rfind('.', last - 1);
    if (before != std::string_view::npos) key = key.substr(before + 1);
  }
  std::string name = lowercase(key);
  std::erase_if(name, [](char c) { return c == '-' || c == '_' || c == '.'; });
  const bool plural = name.find("gpus") != std::string::npos;
  const auto at = name.find(plural ? "gpus" : "gpu");
  if (at == std::string::npos) return false;
  const std::string_view text(name);
  return made_of_count_words(text.substr(0, at)) && made_of_count_words(text.substr(at + (plural ? 4 : 3)));
}

// A count of GPUs other than none: a number above 0, a string holding one
// ("2", "0.5") or ending in one ("A100:8"), or an object holding one as
// its value, quantity or count ({gpu: {quantity: 2}}, Run:ai's {value: "1"}).
bool asks_some(JsonView value) {
  if (value.is_object()) {
    for (const char* key : {"value", "quantity", "count"}) {
      if (asks_some(value[key])) return true;
    }
    return false;
  }
  const std::string written = value.is_number() ? value.text() : std::string(value.string());
  std::string_view text = written;
  if (const auto colon = text.rfind(':'); colon != std::string_view::npos) text = text.substr(colon + 1);
  const bool number = !text.empty() && std::all_of(text.begin(), text.end(),
                                                   [](unsigned char c) { return std::isdigit(c) || c == '.'; });
  return number && text.find_first_not_of("0.") != std::string_view::npos;
}

// A list's element in a walk's path (for_each_indexed writes its index).
bool is_index(std::string_view token) {
  return !token.empty() && std::all_of(token.begin(), token.end(), [](unsigned char c) { return std::isdigit(c); });
}

// An element of a list of GPU devices: KubeVirt's
// spec.domain.devices.gpus[] (a VM's, under spec.template.spec), whose
// deviceName is the GPU's resource, whatever its device plugin calls it
// (nvidia.com/GP102GL_Tesla_P40), and whose claimName is a DRA claim for
// it. Not an instance type's spec.gpus[], which describes a machine.
bool in_gpu_list(const std::vector<std::string>& path) {
  const std::size_t n = path.size();
  return n >= 3 && is_index(path[n - 1]) && lowercase(path[n - 2]).find("gpu") != std::string::npos &&
         path[n - 3] == "devices";
}

// Where a GPU resource's count asks for GPUs: a ResourceRequirements'
// limits or requests (resources.limits, resourcesPerNode.requests) or a
// list item's (llmaz's inferenceConfig.flavors[]); a ResourceList of its
// own named resources (Dynamo's services.*.device.resources); KubeSpawner's
// extra_resource_limits and extra_resource_guarantees (a JupyterHub
// profile's GPUs). Not an object's own limits (a NodePool's, a Queue's
// capability, a ResourceQuota's hard).
bool in_resource_list(const std::vector<std::string>& path) {
  const std::size_t n = path.size();
  if (n == 0) return false;
  if (n >= 2 && (path[n - 1] == "limits" || path[n - 1] == "requests") &&
      (path[n - 2].starts_with("resources") || is_index(path[n - 2]))) {
    return true;
  }
  return path[n - 1] == "resources" || path[n - 1] == "extra_resource_limits" ||
         path[n - 1] == "extra_resource_guarantees";
}

// A string written as an extended resource's name (domain/name: a DNS
// subdomain, one slash, a name of letters, digits, '-', '_' and '.'), not
// an image reference or a URL.
bool names_resource(JsonView value) {
  if (!value.is_string()) return false;
  const std::string_view text = value.string();
  const auto slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size()) return false;
  const std::string_view domain = text.substr(0, slash);
  const std::string_view name = text.substr(slash + 1);
  const auto domain_char = [](unsigned char c) { return std::islower(c) || std::isdigit(c) || c == '-' || c == '.'; };
  const auto name_char = [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; };
  return domain.find('.') != std::string_view::npos && std::all_of(domain.begin(), domain.end(), domain_char) &&
         std::isalnum(static_cast<unsigned char>(name.front())) && std::all_of(name.begin(), name.end(), name_char);
}

// Walks an object for GPU asks (gpu_asks_outside's test), skipping the
// subtrees at `skip`.
class GpuAskScan {
 public:
  // claims_anywhere: the object has pods that are read, so a claim
  // anywhere else in it is one they may not get; otherwise (a PodGroup's
  // claims, which pods read on their own share) only a claim in a pod spec
  // no one reads is said.
  GpuAskScan(const IsGpuResource& is_gpu, std::size_t named, bool by_name, bool claims_anywhere)
      : is_gpu_(is_gpu), named_(named), by_name_(by_name), claims_anywhere_(claims_anywhere) {}

  // `skip` is the tree of paths not to look at below `path`, or nullptr;
  // `pod_claims`: `node` is in a pod spec's resourceClaims.
  void scan(JsonView node, std::vector<std::string>& path, const PathTree* skip, bool pod_claims = false) {
    if (skip && skip->ends_here()) return;
    const auto below = [&](std::string_view token) { return skip ? skip->below(token) : nullptr; };
    if (node.is_array()) {
      for_each_indexed(node, path, [&](JsonView element) { scan(element, path, below(path.back()), pod_claims); });
      return;
    }
    node.for_each_member([&](std::string_view key, JsonView value) {
      const bool ask = asks(path, key, value);
      const bool gpu_claim = in_gpu_list(path) && key == "claimName" && value.is_string();
      const bool claim = !ask && (gpu_claim || ((claims_anywhere_ || pod_claims) && names_claim(key, value)));
      const bool into_pod_claims = pod_claims || (key == "resourceClaims" && node["containers"].is_array());
      path.emplace_back(key);
      if (ask) {
        if (asks_.paths.size() < named_) asks_.paths.push_back(field_path(path));
        ++asks_.count;
      } else if (claim) {
        if (asks_.claim_paths.size() < named_) asks_.claim_paths.push_back(field_path(path));
        ++asks_.claim_count;
      } else if (value.is_object() || value.is_array()) {
        scan(value, path, below(key), into_pod_claims);
      }
      path.pop_back();
    });
  }

  GpuAsks found() && { return std::move(asks_); }

 private:
  // A GPU count other than zero in a ResourceList (in_resource_list). Or a
  // field named for GPUs whose value is a GPU resource (gpuType:
  // nvidia.com/gpu), or a resource named in a list of GPUs (in_gpu_list).
  bool asks(const std::vector<std::string>& path, std::string_view key, JsonView value) const {
    if (by_name_ && names_gpu_count(key) && asks_some(value)) return true;
    if (is_gpu_(key)) {
      if (!in_resource_list(path)) return false;
      if (value.is_number()) return value.text() != "0";
      return value.is_string() && value.string() != "0";
    }
    if (in_gpu_list(path) && key == "deviceName" && names_resource(value)) return true;
    // Written as a resource's name: not a path or a text that says gpu
    // (Spark's gpu.discoveryScript: /opt/.../getGpusResources.sh).
    if (!names_resource(value) || !is_gpu_(value.string())) return false;
    return lowercase(key).find("gpu") != std::string::npos;
  }

  // A DRA claim named: a pod's resourceClaims entry (resourceClaimName,
  // resourceClaimTemplateName; DRA v1alpha2's source block has the same
  // keys) or a NIMService's draResources entry, which may instead write
  // the claim inline (claimCreationSpec).
  static bool names_claim(std::string_view key, JsonView value) {
    if (key == "resourceClaimName" || key == "resourceClaimTemplateName") {
      return value.is_string() && !value.string().empty();
    }
    return key == "claimCreationSpec" && value.is_object();
  }

  const IsGpuResource& is_gpu_;
  std::size_t named_;
  bool by_name_;  // GPU-named count fields ask too
  bool claims_anywhere_;
  GpuAsks asks_;
};

// What gpu_asks_outside does not look at in a pod read: what its reader
// reads (a pod template or Argo template whole; a pod spec's containers
// and claims; a container's resources). The rest of an inline pod spec or container
// (a KServe predictor's workerSpec, a NIMService's other fields) is looked at.
PathTree read_parts(const std::vector<PodTemplateRef>& read) {
  PathTree parts;
  for (const PodTemplateRef& ref : read) {
    const auto below = [&](const std::string& key) {
      std::vector<std::string> path = ref.path;
      path.push_back(key);
      parts.add(path);
    };
    switch (ref.shape) {
      case PodShape::kPod: parts.add(ref.path); break;
      case PodShape::kArgoTemplate: {
        parts.add(ref.path);
        // The workflow's claims, which its templates' pods get.
        std::vector<std::string> claims = ref.workflow_spec_path;
        claims.emplace_back("resourceClaims");
        parts.add(claims);
        break;
      }
      case PodShape::kPodSpec:
        below("containers");
        below("initContainers");
        below("resourceClaims");
        break;
      case PodShape::kContainer: below(ref.resources_key); break;
      case PodShape::kFields:
        // The block that holds its GPU field (Dynamo's gpuType beside it).
        for (const std::string* field : {&ref.fields->gpu, &ref.fields->gpu_resource}) {
          if (!field->empty()) below(std::string(location_parts(*field).front()));
        }
        break;
    }
  }
  return parts;
}

bool asks_for_gpus(JsonView node, const IsGpuResource& is_gpu) {
  std::vector<std::string> path;
  GpuAskScan scan(is_gpu, 0, false, false);
  scan.scan(node, path, nullptr);
  return std::move(scan).found().count > 0;
}

// What a discovered pod is by its shape; nullopt: not a pod.
std::optional<PodShape> pod_shape_of(JsonView node) {
  if (node["spec"]["containers"].is_array()) return PodShape::kPod;
  if (node["containers"].is_array()) return PodShape::kPodSpec;
  if (node["resources"].is_object() && node["image"].is_string()) return PodShape::kContainer;
  return std::nullopt;
}

void discover(JsonView node, std::vector<std::string>& path, const IsGpuResource& is_gpu,
              std::vector<PodTemplateRef>& out) {
  if (node.is_array()) {
    for_each_indexed(node, path, [&](JsonView element) { discover(element, path, is_gpu, out); });
    return;
  }
  if (!node.is_object()) return;
  if (const auto shape = pod_shape_of(node); shape && !path.empty()) {
    // A pod's own fields hold no further pods.
    if (!asks_for_gpus(node, is_gpu)) return;
    PodTemplateRef ref;
    ref.pod = node;
    ref.shape = *shape;
    ref.path = path;
    // A container's name is said as its own ("container \"runner\""); a
    // template or pod spec is named by its element's name, when it has one.
    if (*shape != PodShape::kContainer) ref.replica_type = name_of(node);
    out.push_back(std::move(ref));
    return;
  }
  node.for_each_member([&](std::string_view key, JsonView value) {
    if (path.empty() && reports_only(key)) return;
    path.emplace_back(key);
    discover(value, path, is_gpu, out);
    path.pop_back();
  });
}

}  // namespace

const WorkloadKind* find_workload_kind(std::string_view group, std::string_view kind,
                                       const std::vector<WorkloadKind>& policy_kinds) {
  if (const WorkloadKind* own = find_in(policy_kinds, group, kind)) return own;
  return find_in(builtin_workload_kinds(), group, kind);
}

std::vector<PodTemplateRef> find_pod_templates(const WorkloadKind& entry, JsonView object) {
  std::vector<PodTemplateRef> found;
  if (!object.is_object()) return found;
  for (const TemplateLocation& location : entry.locations) {
    std::vector<std::string> path;
    Walker(location, found).walk(object, location_parts(location.pattern), 0, path, "");
  }
  return found;
}

std::vector<PodTemplateRef> find_pod_templates(std::string_view group, std::string_view kind, JsonView object) {
  const WorkloadKind* entry = find_in(builtin_workload_kinds(), group, kind);
  return entry ? find_pod_templates(*entry, object) : std::vector<PodTemplateRef>();
}

std::vector<PodTemplateRef> discover_pod_templates(JsonView object, const IsGpuResource& is_gpu) {
  std::vector<PodTemplateRef> found;
  std::vector<std::string> path;
  discover(object, path, is_gpu, found);
  return found;
}

GpuAsks gpu_asks_outside(JsonView object, const std::vector<PodTemplateRef>& read, const IsGpuResource& is_gpu,
                         const UnknownKind* unknown) {
  // Enough to name the places in a message; the count says how many more.
  constexpr std::size_t kMostNamed = 8;
  std::vector<std::string> path;
  PathTree skip = read_parts(read);
  if (unknown) {
    for (const HardwareDescription& entry : kHardwareDescriptions) {
      if (entry.group != unknown->group || entry.kind != unknown->kind) continue;
      const std::vector<std::string_view> parts = location_parts(entry.path);
      skip.add({parts.begin(), parts.end()});
    }
  }
  GpuAskScan scan(is_gpu, kMostNamed, unknown != nullptr, !read.empty());
  object.for_each_member([&](std::string_view key, JsonView value) {
    if (reports_only(key)) return;
    path.emplace_back(key);
    if (value.is_object() || value.is_array()) scan.scan(value, path, skip.below(key));
    path.pop_back();
  });
  return std::move(scan).found();
}

}  // namespace gpusizer
