#include "gpusizer/workloads/workloads.h"

#include <algorithm>

namespace gpusizer {

namespace {

struct TemplateLocation {
  // Dot-separated keys from the object root. "key[]" walks every element of
  // an array, "*" every value of a map; both name the pod for policy rules
  // (the element's name or groupName, or the map key).
  std::string_view pattern;
  PodShape shape = PodShape::kPod;
};

struct KindEntry {
  std::string_view group;
  std::string_view kind;
  std::vector<TemplateLocation> locations;
};

// Where each kind keeps its pod templates (docs/workloads.md, from each
// project's CRD). Adding a kind is adding a row.
const std::vector<KindEntry>& kind_table() {
  static const std::vector<KindEntry> table = {
      {"", "Pod", {{""}}},
      {"batch", "Job", {{"spec.template"}}},
      {"batch", "CronJob", {{"spec.jobTemplate.spec.template"}}},
      {"apps", "Deployment", {{"spec.template"}}},
      {"apps", "StatefulSet", {{"spec.template"}}},
      {"apps", "ReplicaSet", {{"spec.template"}}},
      {"apps", "DaemonSet", {{"spec.template"}}},
      {"argoproj.io", "Workflow", {{"spec.templates[]", PodShape::kArgoTemplate}}},
      {"argoproj.io", "WorkflowTemplate", {{"spec.templates[]", PodShape::kArgoTemplate}}},
      {"argoproj.io", "ClusterWorkflowTemplate", {{"spec.templates[]", PodShape::kArgoTemplate}}},
      {"argoproj.io", "CronWorkflow", {{"spec.workflowSpec.templates[]", PodShape::kArgoTemplate}}},
      {"kubeflow.org", "PyTorchJob", {{"spec.pytorchReplicaSpecs.*.template"}}},
      {"jobset.x-k8s.io", "JobSet", {{"spec.replicatedJobs[].template.spec.template"}}},
      {"ray.io", "RayCluster", {{"spec.headGroupSpec.template"}, {"spec.workerGroupSpecs[].template"}}},
      {"ray.io",
       "RayJob",
       {{"spec.rayClusterSpec.headGroupSpec.template"},
        {"spec.rayClusterSpec.workerGroupSpecs[].template"},
        {"spec.submitterPodTemplate"}}},
      {"batch.volcano.sh", "Job", {{"spec.tasks[].template"}}},
  };
  return table;
}

const KindEntry* find_kind(std::string_view group, std::string_view kind) {
  const auto& table = kind_table();
  auto it =
      std::find_if(table.begin(), table.end(), [&](const KindEntry& e) { return e.group == group && e.kind == kind; });
  return it == table.end() ? nullptr : &*it;
}

std::vector<std::string_view> split(std::string_view pattern) {
  std::vector<std::string_view> parts;
  while (!pattern.empty()) {
    const auto dot = pattern.find('.');
    parts.push_back(pattern.substr(0, dot));
    pattern = dot == std::string_view::npos ? std::string_view() : pattern.substr(dot + 1);
  }
  return parts;
}

std::string name_of(JsonView element) {
  for (const char* key : {"name", "groupName"}) {
    if (element[key].is_string()) return std::string(element[key].string());
  }
  return "";
}

// Argo templates that run a pod; steps, dag, resource, suspend and the rest
// run none.
bool runs_pod(JsonView argo_template) {
  return argo_template.contains("container") || argo_template.contains("script") ||
         argo_template.contains("containerSet");
}

class Walker {
 public:
  Walker(PodShape shape, std::vector<PodTemplateRef>& out) : shape_(shape), out_(out) {}

  void walk(JsonView node, const std::vector<std::string_view>& parts, std::size_t index,
            std::vector<std::string>& path, const std::string& name) {
    if (index == parts.size()) {
      emit(node, path, name);
      return;
    }
    if (!node.is_object()) return;
    const std::string_view part = parts[index];
    if (part == "*") {
      for (const auto& [key, value] : node.members()) {
        path.emplace_back(key);
        walk(value, parts, index + 1, path, std::string(key));
        path.pop_back();
      }
      return;
    }
    const bool each = part.ends_with("[]");
    const std::string_view key = each ? part.substr(0, part.size() - 2) : part;
    const JsonView child = node[key];
    if (child.is_absent()) return;
    path.emplace_back(key);
    if (!each) {
      walk(child, parts, index + 1, path, name);
    } else if (child.is_array()) {
      if (shape_ == PodShape::kArgoTemplate) enter_argo_spec(node, {path.begin(), path.end() - 1});
      const auto items = child.elements();
      for (std::size_t i = 0; i < items.size(); ++i) {
        path.push_back(std::to_string(i));
        walk(items[i], parts, index + 1, path, name_of(items[i]));
        path.pop_back();
      }
    }
    path.pop_back();
  }

 private:
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
    ref.shape = shape_;
    ref.path = path;
    if (shape_ == PodShape::kArgoTemplate) {
      if (!runs_pod(node)) return;
      ref.template_name = name;
      ref.template_defaults = template_defaults_;
      ref.workflow_spec = workflow_spec_;
      ref.workflow_spec_path = workflow_spec_path_;
      ref.workflow_pod_spec_patch = pod_spec_patch_;
    } else {
      ref.replica_type = name;
    }
    out_.push_back(std::move(ref));
  }

  PodShape shape_;
  std::vector<PodTemplateRef>& out_;
  JsonView workflow_spec_;
  std::vector<std::string> workflow_spec_path_;
  JsonView template_defaults_;
  bool pod_spec_patch_ = false;
};

}  // namespace

bool holds_pods(std::string_view group, std::string_view kind) { return find_kind(group, kind) != nullptr; }

std::vector<PodTemplateRef> find_pod_templates(std::string_view group, std::string_view kind, JsonView object) {
  std::vector<PodTemplateRef> found;
  const KindEntry* entry = find_kind(group, kind);
  if (!entry || !object.is_object()) return found;
  for (const TemplateLocation& location : entry->locations) {
    std::vector<std::string> path;
    Walker(location.shape, found).walk(object, split(location.pattern), 0, path, "");
  }
  return found;
}

}  // namespace gpusizer
