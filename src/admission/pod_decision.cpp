#include "gpusizer/admission/pod_decision.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>

#include "gpusizer/sizing/data_loader.h"
#include "gpusizer/json/json_access.h"
#include "gpusizer/json/json_text.h"
#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/sizing/node_fit.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/strings.h"
#include "gpusizer/workloads/workloads.h"

namespace gpusizer {

Result<Quantity> quantity_from_json(JsonView value) {
  if (value.is_string()) return Quantity::parse(value.string());
  if (value.is_number()) return Quantity::parse(value.text());
  return Status::invalid_argument("must be a quantity such as \"64Gi\" or 4, found " + std::string(value.type_name()));
}

namespace {

// More GPUs than this in one pod (one node) is a typo, not a machine;
// refusing it, per container and for the containers together, keeps all
// arithmetic far from overflow.
constexpr int64_t kMaxGpusPerPod = 1 << 20;
// The gpu-sizer.io/sized annotation stays far below the API server's 256 KiB
// for all annotations of an object, whatever the number of containers.
constexpr std::size_t kSizedAnnotationBytes = 4096;
// Warnings past 120 characters may be cut by kubectl; keep each below.
constexpr std::size_t kWarningLimit = 119;
// A data-loader floor above this (64Ti) is a typo in the annotation, not a
// node: it is denied instead of patched.
constexpr int64_t kMaxLoaderFloorBytes = int64_t{64} << 40;

const std::string kCpu = "cpu";
const std::string kMemory = "memory";
const std::string kStorage = "ephemeral-storage";

// A container's requests or limits of the resources gpu-sizer reads: a few
// at most, so a list searched in order beats a map. Names point into the
// reviewed document.
class Quantities {
 public:
  const Quantity* find(std::string_view resource) const {
    for (const auto& [name, quantity] : items_) {
      if (name == resource) return &quantity;
    }
    return nullptr;
  }
  // Keeps an earlier value over a later one (a template's over its default).
  void add(std::string_view resource, const Quantity& quantity) {
    if (find(resource)) return;
    if (items_.empty()) items_.reserve(4);  // cpu, memory, ephemeral-storage, a GPU
    items_.emplace_back(resource, quantity);
  }

 private:
  std::vector<std::pair<std::string_view, Quantity>> items_;
};

std::optional<Quantity> value_of(const Quantity* quantity) {
  return quantity ? std::optional<Quantity>(*quantity) : std::nullopt;
}

struct ContainerView {
  std::string name;
  std::vector<std::string> path;  // tokens to the container in the reviewed object
  std::string shm_volume;         // the volume mounted at /dev/shm; empty: none
  Quantities requests;
  Quantities limits;
  int64_t gpus = 0;

  // What the container asks for: the request, or the limit it defaults to.
  std::optional<Quantity> effective_request(const std::string& resource) const {
    if (const Quantity* request = requests.find(resource)) return *request;
    return limit(resource);
  }
  std::optional<Quantity> limit(const std::string& resource) const { return value_of(limits.find(resource)); }
};

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

struct PodView {
  std::vector<ContainerView> app;   // containers and restartable init sidecars
  std::vector<ContainerView> init;  // ordinary init containers: run before, one at a time
  std::vector<std::string> problems;
  bool gpu_problem = false;  // a problem in a GPU field: the pod may hold GPUs
  std::vector<std::string> unresolved;  // resources holding {{...}} or $(VAR) expressions
  bool unresolved_gpu = false;          // ... among them a GPU count
  bool spec_patched = false;            // an Argo podSpecPatch may change any of it
  bool spec_patch_names_gpu = false;    // ... and its text names a GPU resource
  SelectionInput selection;
  bool opted_out = false;
  // Where the pod may be scheduled: its nodeSelector, and the values of the
  // GPU product label that every required node affinity term allows.
  std::map<std::string, std::string, std::less<>> node_selector;
  std::vector<std::string> affinity_products;
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
  PodReader(const Policy& policy, const PodTarget& target) : policy_(policy), target_(target) {}

  PodView read() {
    read_selection();
    if (target_.ref.shape == PodShape::kArgoTemplate) {
      read_argo_template();
    } else {
      read_pod_spec();
    }
    // Where it may run matters only to the checks of GPU pods.
    const auto holds_gpus = [](const std::vector<ContainerView>& list) {
      return std::any_of(list.begin(), list.end(), [](const ContainerView& c) { return c.gpus > 0; });
    };
    if (holds_gpus(view_.app) || holds_gpus(view_.init)) {
      if (target_.ref.shape == PodShape::kArgoTemplate) {
        read_scheduling(pod());
        read_scheduling(target_.ref.workflow_spec);
      } else {
        read_scheduling(pod()["spec"]);
      }
    }
    return std::move(view_);
  }

 private:
  // The template's own labels and annotations first, then the object's.
  void read_selection() {
    const JsonView metadata = pod()["metadata"];
    // The sized annotation is added into these maps: a JSON Patch cannot add
    // a key under any other type (nor is it pod metadata).
    if (!metadata.is_null() && !metadata.is_object()) {
      problem(field({"metadata"}), "is not an object");
    } else if (const JsonView annotations = metadata["annotations"]; !annotations.is_null() && !annotations.is_object()) {
      problem(field({"metadata", "annotations"}), "is not an object");
    }
    // Only the labels and annotations the decision reads are copied: one
    // last-applied-configuration annotation can be most of a review.
    auto wanted_label = [&](std::string_view key) {
      return key == policy_.node_fit.pool_label || selection_reads(policy_, ProfileRule::Subject::kLabel, key);
    };
    // The data loader, model and GPU describe one pod: they are read from
    // its own metadata only, as the Pods a workload creates carry them
    // (an Argo workflow's annotations do not reach its Pods).
    auto describes_the_pod = [](std::string_view key) {
      return key == kDataLoaderKey || key == kModelKey || key == kGpuKey;
    };
    auto wanted_annotation = [&](std::string_view key) {
      return key == kMutateOptOutKey || describes_the_pod(key) ||
             selection_reads(policy_, ProfileRule::Subject::kAnnotation, key);
    };
    auto wanted_parent_annotation = [&](std::string_view key) {
      return !describes_the_pod(key) && wanted_annotation(key);
    };
    add_strings(metadata["annotations"], view_.selection.annotations, wanted_annotation);
    add_strings(target_.parent_metadata["annotations"], view_.selection.annotations, wanted_parent_annotation);
    for (const JsonView source : {metadata, target_.parent_metadata}) {
      add_strings(source["labels"], view_.selection.labels, wanted_label);
      for (const char* key : {"name", "generateName"}) {
        if (view_.selection.name.empty()) view_.selection.name = string_member(source, key);
      }
    }
    view_.selection.template_name = target_.ref.template_name;
    view_.selection.replica_type = target_.ref.replica_type;
    auto opt_out = view_.selection.annotations.find(kMutateOptOutKey);
    view_.opted_out = opt_out != view_.selection.annotations.end() && opt_out->second == "false";
  }

  void read_pod_spec() {
    const JsonView spec = pod()["spec"];
    if (!spec.is_object()) {
      problem(field({"spec"}), "is missing or not an object");
      return;
    }
    const JsonView containers = spec["containers"];
    if (!containers.is_array()) {
      problem(field({"spec", "containers"}), "is missing or not a list");
      return;
    }
    read_list(containers, {"spec", "containers"}, Role::kApp);
    read_list(spec["initContainers"], {"spec", "initContainers"}, Role::kInit);
    check_volumes_list(spec["volumes"], {"spec", "volumes"});
  }

  // nodeSelector entries and the GPU products required node affinity
  // allows; earlier sources (an Argo template) win over later ones (its
  // workflow).
  void read_scheduling(JsonView spec) {
    add_strings(spec["nodeSelector"], view_.node_selector, [](std::string_view) { return true; });
    if (!view_.affinity_products.empty()) return;
    const JsonView terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                               ["nodeSelectorTerms"];
    // Terms are ORed: the products are known only when every term names them.
    std::vector<std::string> products;
    bool every_term = terms.is_array();
    terms.for_each_element([&](JsonView term) {
      bool names_product = false;
      term["matchExpressions"].for_each_element([&](JsonView expression) {
        if (expression["key"].string() != policy_.gpu_memory.product_label ||
            expression["operator"].string() != "In") {
          return;
        }
        names_product = true;
        expression["values"].for_each_element([&](JsonView value) {
          if (value.is_string()) products.emplace_back(value.string());
        });
      });
      every_term = every_term && names_product;
    });
    if (every_term) view_.affinity_products = std::move(products);
  }

  // Argo runs the template's container, script or containerSet as the main
  // containers, sidecars beside them and initContainers before them.
  // templateDefaults are merged under the template's container or script.
  void read_argo_template() {
    const std::string patch = string_member(pod(), "podSpecPatch");
    view_.spec_patched = target_.ref.workflow_pod_spec_patch || pod().contains("podSpecPatch");
    for (const auto& resource : policy_.gpu_resources) {
      view_.spec_patch_names_gpu = view_.spec_patch_names_gpu || patch.find(resource) != std::string::npos;
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
  void check_volumes_list(JsonView volumes, std::initializer_list<std::string> tokens) {
    if (!volumes.is_null() && !volumes.is_array()) problem(field(tokens), "is not a list");
  }

  enum class Role { kApp, kInit };

  JsonView pod() const { return target_.ref.pod; }

  std::vector<std::string> absolute(std::initializer_list<std::string> tokens) const {
    std::vector<std::string> path = target_.ref.path;
    path.insert(path.end(), tokens);
    return path;
  }
  std::string field(std::initializer_list<std::string> tokens) const { return field_path(absolute(tokens)); }

  void problem(const std::string& field, const std::string& what, bool gpu_field = false) {
    view_.problems.push_back(target_.description + ": " + field + " " + what);
    view_.gpu_problem = view_.gpu_problem || gpu_field;
  }

  void read_list(JsonView list, std::initializer_list<std::string> tokens, Role role) {
    if (list.is_null()) return;
    if (!list.is_array()) {
      problem(field(tokens), "is not a list");
      return;
    }
    std::size_t index = 0;
    list.for_each_element([&](JsonView item) {
      std::vector<std::string> path = absolute(tokens);
      path.push_back(std::to_string(index++));
      read_container(item, std::move(path), role, JsonView(), "", "");
    });
  }

  // unnamed: the name a container without one gets at run time (Argo calls
  // its main container "main"); empty means its field path. defaults:
  // Argo's templateDefaults for this container, or absent.
  void read_container(JsonView item, std::vector<std::string> path, Role role, JsonView defaults,
                      const std::string& defaults_field, const std::string& unnamed) {
    if (!item.is_object()) {
      problem(field_path(path), "is not an object");
      return;
    }
    ContainerView container;
    container.path = std::move(path);
    const FieldName where(container.path);
    container.name = string_member(item, "name");
    if (container.name.empty()) container.name = unnamed.empty() ? where.text() : unnamed;
    // The template's values win over its defaults, key by key.
    read_resources(item, where, container);
    if (defaults.is_object()) read_resources(defaults, FieldName(defaults_field), container);
    for (const auto& resource : policy_.gpu_resources) container.gpus += gpu_count(container, resource, where);
    // Sidecars (init containers that keep running) hold resources alongside
    // the app containers, so they count with them.
    const bool sidecar = role == Role::kInit && item["restartPolicy"].string() == "Always";
    if ((role == Role::kApp || sidecar) && container.gpus > 0) {
      // The /dev/shm mount is appended here: a JSON Patch adds to a list only.
      const JsonView mounts = item["volumeMounts"];
      if (!mounts.is_null() && !mounts.is_array()) problem(where.text() + ".volumeMounts", "is not a list");
      container.shm_volume = shm_mount(item);
    }
    (role == Role::kInit && !sidecar ? view_.init : view_.app).push_back(std::move(container));
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

  void read_resources(JsonView item, const FieldName& field, ContainerView& container) {
    const JsonView resources = item["resources"];
    if (resources.is_null()) return;
    if (!resources.is_object()) {
      problem(field.text() + ".resources", "is not an object");
      return;
    }
    read_quantities(resources, "requests", field, container.requests);
    read_quantities(resources, "limits", field, container.limits);
  }

  void read_quantities(JsonView resources, std::string_view key, const FieldName& field, Quantities& out) {
    const JsonView map = resources[key];
    if (map.is_null()) return;
    auto map_field = [&] { return field.text() + ".resources." + std::string(key); };
    if (!map.is_object()) {
      problem(map_field(), "is not an object");
      return;
    }
    map.for_each_member([&](std::string_view resource, JsonView value) {
      const bool gpu = policy_.is_gpu_resource(resource);
      if (!gpu && resource != kCpu && resource != kMemory && resource != kStorage) return;
      auto quantity = quantity_from_json(value);
      if (!quantity && is_unresolved(value)) {
        // A template parameter, filled in when the workflow runs: not an
        // error, but nothing to decide on until the Pod exists.
        view_.unresolved.push_back(std::string(resource) + " is \"" + std::string(value.string()) + "\"");
        view_.unresolved_gpu = view_.unresolved_gpu || gpu;
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

  int64_t gpu_count(const ContainerView& container, const std::string& resource, const FieldName& field) {
    const Quantity* request = container.requests.find(resource);
    const Quantity* limit = container.limits.find(resource);
    if (!request && !limit) return 0;
    auto where = [&] { return field.text() + ".resources"; };
    if (request && limit && *request != *limit) {
      problem(where(), resource + " request " + request->to_string() + " and limit " + limit->to_string() +
                         " differ; GPUs are not overcommitted: set both to the same number",
              true);
      return 0;
    }
    const Quantity& count = limit ? *limit : *request;
    if (!count.is_whole()) {
      problem(where(), resource + " must be a whole number of GPUs, found " + count.to_string(), true);
      return 0;
    }
    if (count.value_ceil() > kMaxGpusPerPod) {
      problem(where(), resource + " asks for " + count.to_string() + " GPUs, more than any node has", true);
      return 0;
    }
    return count.value_ceil();
  }

  const Policy& policy_;
  const PodTarget& target_;
  PodView view_;
};

// Containers that run together and hold GPUs: they share what `gpus` GPUs need.
struct Group {
  std::vector<const ContainerView*> holders;
  int64_t gpus = 0;
  bool app = false;  // the app containers (and sidecars), not an init container
};

// The pod's /dev/shm against the policy's sharedMemory: for the GPU
// containers of the profiles it lists.
struct ShmPlan {
  bool applies = false;
  std::string volume;                      // the /dev/shm volume, existing or to add
  std::vector<std::string> volume_path;    // tokens of the existing volume; empty when it is added
  std::optional<Quantity> size_limit;      // the existing volume's sizeLimit; nullopt: none
  bool add_volume = false;
  bool enlarge = false;                    // sizeLimit below the minimum
  std::vector<const ContainerView*> unmounted;  // GPU containers not mounting it
  // Other memory emptyDirs some GPU container mounts at /dev/shm, below
  // the minimum: each is enlarged (or denied) like the first.
  struct SmallVolume {
    std::string name;
    std::vector<std::string> path;
    Quantity size_limit;
  };
  std::vector<SmallVolume> small_others;
  std::optional<Quantity> size;            // the pod's /dev/shm once fixed (all volumes); nullopt: unbounded

  bool fix_needed() const { return add_volume || enlarge || !unmounted.empty() || !small_others.empty(); }
};

// One resource of one container below what its share of the GPUs needs.
// What one phase of a pod (its app containers, or one init container)
// needs, and why.
struct GroupNeed {
  Requirement need;
  std::string basis;      // why that much memory: "train profile", "train 192Gi + 32Gi /dev/shm", "data loader"
  std::string arithmetic;  // how a rule beyond the table got there, for denials; empty for the table
};

struct Shortfall {
  const ContainerView* container;
  int64_t group_gpus;  // GPUs of the phase the container runs in
  const GroupNeed* group;
  const std::string* resource;
  Quantity need;
  std::optional<Quantity> request;  // effective: the request or its default, the limit
  std::optional<Quantity> limit;
};

std::string fit(std::string text) { return truncate_utf8(std::move(text), kWarningLimit); }

// Container names run to 63 characters; shorten them so a warning stays
// under the limit and still ends with the numbers a person acts on.
std::string fit_warning(const std::string& prefix, const std::string& container, const std::string& rest) {
  const std::string tail = "\": " + rest;
  const std::string head = prefix + "container \"";
  std::string name = container;
  const std::size_t fixed = head.size() + tail.size();
  if (fixed + name.size() > kWarningLimit && fixed + 8 < kWarningLimit) {
    name = truncate_utf8(name, kWarningLimit - fixed);
  }
  return fit(head + name + tail);
}

std::string show(const std::optional<Quantity>& quantity) {
  return quantity ? quantity->to_string() : "unset";
}

class PodDecider {
 public:
  PodDecider(const Policy& policy, Endpoint endpoint, const PodTarget& target, PatchBuilder& patch)
      : policy_(policy), endpoint_(endpoint), target_(target), patch_(patch) {}

  PodDecision decide() {
    decision_.description = target_.description;
    view_ = PodReader(policy_, target_).read();
    // Init containers run one at a time before the app containers, so the
    // phases are sized apart: the app containers share what their GPU sum
    // needs, and each init container that asks for more GPUs than all of
    // them gets what its own count needs.
    Group app;
    for (const auto& c : view_.app) {
      if (c.gpus == 0) continue;
      app.holders.push_back(&c);
      app.gpus += c.gpus;
    }
    if (app.gpus > kMaxGpusPerPod) {
      view_.problems.push_back(target_.description + ": its containers ask for " + gpus_text(app.gpus) +
                               " together, more than any node has");
      view_.gpu_problem = true;
    } else if (app.gpus > 0) {
      app.app = true;
      groups_.push_back(app);
    }
    decision_.gpus = app.gpus;
    for (const auto& c : view_.init) {
      if (c.gpus > app.gpus) groups_.push_back(Group{{&c}, c.gpus});
      decision_.gpus = std::max(decision_.gpus, c.gpus);
    }
    if (leave_for_the_pod()) return std::move(decision_);
    if (decision_.gpus == 0 && !view_.gpu_problem) return std::move(decision_);

    auto choice = select_profile(policy_, view_.selection);
    if (!choice) {
      profile_problem_ = target_.description + ": " + choice.error();
    } else if (decision_.gpus > 0) {
      profile_ = choice.value().profile;
      decision_.profile = profile_->name;
      decision_.profile_reason = choice.value().reason;
      check_gpu_limit();
      plan_shm();
      plan_loader();
      find_shortfalls();
    }

    // The checks no patch can fix run where they can deny (and for explain).
    if (profile_ && (endpoint_ == Endpoint::kValidate || target_.explain)) {
      check_nodes();
      check_model();
    }
    if (profile_ && target_.explain) explain_containers();
    if (endpoint_ == Endpoint::kMutate) {
      if (target_.mode == Mode::kMutate && !view_.opted_out && view_.problems.empty() && profile_problem_.empty()) {
        raise_shortfalls();
      }
    } else {
      report();
    }
    return std::move(decision_);
  }

 private:
  std::string profile_text() const { return profile_->name + " profile"; }

  // Some templates can only be decided once their Pod exists: a GPU count or
  // resource that is an expression filled in at run time, or an Argo
  // podSpecPatch that may change resources. They are left unchanged, said so
  // (once, by the validating endpoint, which always runs), and the Pod is
  // decided when it is created.
  bool leave_for_the_pod() {
    const bool gpus_known_or_named = decision_.gpus > 0 || view_.unresolved_gpu || view_.spec_patch_names_gpu;
    std::string why;
    if (view_.unresolved_gpu || (decision_.gpus > 0 && !view_.unresolved.empty())) {
      why = view_.unresolved.front() + " until it runs";
    } else if (view_.spec_patched && gpus_known_or_named) {
      why = "podSpecPatch may change its resources";
    } else {
      return false;
    }
    decision_.undecided = true;
    if (endpoint_ == Endpoint::kValidate) {
      decision_.warnings.push_back(fit(target_.description + ": " + why + "; its Pod is checked when created"));
    }
    return true;
  }

  void check_gpu_limit() {
    if (!profile_->max_gpus || decision_.gpus <= *profile_->max_gpus) return;
    violations_.push_back(
        target_.description + ": the " + profile_text() + " is a single-pod stage allowing at most " +
        std::to_string(*profile_->max_gpus) + " GPU(s), found " + gpus_text(decision_.gpus) + " (" +
        decision_.profile_reason + "); set the GPU count to " + std::to_string(*profile_->max_gpus) +
        " (OSMO: --set " + set_hint(*profile_, *profile_->max_gpus) + ")");
    short_violations_.push_back("the " + profile_text() + " allows at most " +
                                std::to_string(*profile_->max_gpus) + " GPU(s), found " + gpus_text(decision_.gpus));
  }

  // The /dev/shm volume of the pod, what is missing, and its size once fixed.
  void plan_shm() {
    const SharedMemoryPolicy& rule = policy_.shared_memory;
    if (groups_.empty() || !groups_.front().app ||
        std::find(rule.profiles.begin(), rule.profiles.end(), profile_->name) == rule.profiles.end()) {
      return;
    }
    const auto& holders = groups_.front().holders;
    std::string mounted;  // the volume some GPU container mounts at /dev/shm
    for (const ContainerView* holder : holders) {
      if (mounted.empty()) mounted = holder->shm_volume;
    }
    const std::string name = mounted.empty() ? rule.volume_name : mounted;
    const auto volume = find_volume(name);
    if (!volume) {
      // A mount of a volume the pod lacks: the API server refuses the pod.
      if (!mounted.empty()) return;
      shm_.add_volume = true;
    } else {
      if (!is_memory_backed(volume->second)) {
        if (mounted.empty()) {
          view_.problems.push_back(target_.description + ": " + field_path(volume->first) + " is volume \"" + name +
                                   "\", the name gpu-sizer gives the /dev/shm it adds, and is not /dev/shm; rename it");
        } else {
          note_not_memory_backed(name);
        }
        return;
      }
      shm_.volume_path = volume->first;
      if (!read_size_limit(*volume, shm_.size_limit)) return;
      shm_.enlarge = shm_.size_limit && *shm_.size_limit < rule.minimum;
    }
    shm_.applies = true;
    shm_.volume = name;
    shm_.size = shm_.add_volume || shm_.enlarge ? std::optional(rule.size) : shm_.size_limit;
    std::vector<std::string> others;  // each volume once
    for (const ContainerView* holder : holders) {
      if (holder->shm_volume.empty()) shm_.unmounted.push_back(holder);
      if (holder->shm_volume.empty() || holder->shm_volume == name ||
          std::find(others.begin(), others.end(), holder->shm_volume) != others.end()) {
        continue;
      }
      others.push_back(holder->shm_volume);
      add_other_shm(holder->shm_volume);
    }
  }

  // Another container's /dev/shm volume: too small ones are enlarged; each
  // memory-backed one counts against the memory limit too.
  void add_other_shm(const std::string& name) {
    const auto volume = find_volume(name);
    if (!volume) return;
    if (!is_memory_backed(volume->second)) {
      note_not_memory_backed(name);
      return;
    }
    std::optional<Quantity> limit;
    if (!read_size_limit(*volume, limit)) return;
    if (!limit) {
      shm_.size.reset();  // bounded only by the memory limits
      return;
    }
    const SharedMemoryPolicy& rule = policy_.shared_memory;
    if (*limit < rule.minimum) shm_.small_others.push_back({name, volume->first, *limit});
    if (shm_.size) shm_.size = shm_.size->plus(*limit < rule.minimum ? rule.size : *limit);
  }

  static bool is_memory_backed(JsonView volume) {
    const JsonView empty_dir = volume["emptyDir"];
    return empty_dir.is_object() && empty_dir["medium"].string() == "Memory";
  }

  void note_not_memory_backed(const std::string& name) {
    shm_notes_.push_back(target_.description + ": /dev/shm (volume \"" + name +
                         "\") is not a memory-backed emptyDir; its size is not checked");
  }

  // A memory emptyDir's sizeLimit into `limit` (nullopt: none); false, with
  // a problem recorded, when it does not parse.
  bool read_size_limit(const std::pair<std::vector<std::string>, JsonView>& volume, std::optional<Quantity>& limit) {
    const JsonView value = volume.second["emptyDir"]["sizeLimit"];
    if (value.is_null()) return true;
    auto size = quantity_from_json(value);
    if (!size) {
      view_.problems.push_back(target_.description + ": " + field_path(volume.first) + ".emptyDir.sizeLimit " +
                               size.error());
      return false;
    }
    limit = size.value();
    return true;
  }

  // Where the pod's volumes are, and their tokens: a Pod's spec.volumes; an
  // Argo template's volumes, then the workflow's.
  std::vector<std::pair<std::vector<std::string>, JsonView>> volume_lists() const {
    const PodTemplateRef& ref = target_.ref;
    std::vector<std::string> own = ref.path;
    if (ref.shape == PodShape::kPod) {
      own.insert(own.end(), {"spec", "volumes"});
      return {{own, ref.pod["spec"]["volumes"]}};
    }
    own.push_back("volumes");
    std::vector<std::string> workflow = ref.workflow_spec_path;
    workflow.push_back("volumes");
    return {{own, ref.pod["volumes"]}, {workflow, ref.workflow_spec["volumes"]}};
  }

  // The volume named `name` and its tokens, or nullopt.
  std::optional<std::pair<std::vector<std::string>, JsonView>> find_volume(const std::string& name) const {
    for (const auto& list : volume_lists()) {
      std::optional<std::pair<std::vector<std::string>, JsonView>> found;
      std::size_t index = 0;
      list.second.for_each_element([&](JsonView volume) {
        if (!found && volume["name"].string() == name) {
          found.emplace(list.first, volume);
          found->first.push_back(std::to_string(index));
        }
        ++index;
      });
      if (found) return found;
    }
    return std::nullopt;
  }

  // The data-loader memory floor of the app containers, from the annotation.
  void plan_loader() {
    const auto annotation = view_.selection.annotations.find(kDataLoaderKey);
    if (annotation == view_.selection.annotations.end() || groups_.empty() || !groups_.front().app) return;
    auto spec = parse_dataloader(annotation->second, policy_.data_loader);
    if (!spec) {
      view_.problems.push_back(target_.description + ": annotation " + kDataLoaderKey + " " + spec.error());
      loader_problem_ = view_.problems.back();
      return;
    }
    DataLoaderFloor floor = data_loader_floor(policy_.data_loader, spec.value(), groups_.front().gpus);
    // A typo (sample=3x224x224000) must be denied, not patched into a
    // request no node has.
    if (floor.memory > Quantity::from_bytes(kMaxLoaderFloorBytes)) {
      view_.problems.push_back(target_.description + ": annotation " + kDataLoaderKey + " needs " +
                               floor.memory.to_string() + " of memory (" + floor.detail +
                               "), more than any node has; check its values");
      loader_problem_ = view_.problems.back();
      return;
    }
    if (!floor.memory.is_zero()) loader_ = std::move(floor);
  }

  // Each phase's needs: the profile's table; for the app containers also
  // the /dev/shm above what the table holds, and the data loader's floor
  // when it is larger.
  void find_shortfalls() {
    for (const Group& group : groups_) {
      const auto table = required_resources(*profile_, group.gpus);
      const bool loader = group.app && loader_;
      if (!table && !loader) continue;
      Requirement need = table.value_or(Requirement{});
      std::string basis = profile_text();
      const Quantity& included = policy_.shared_memory.table_includes;
      if (table && group.app && shm_.applies && shm_.size && *shm_.size > included) {
        need.memory = need.memory.plus(shm_.size->plus(included.times(-1)));
        // "train 192Gi + 32Gi /dev/shm": the table and the /dev/shm above
        // what it includes.
        basis = profile_->name + " " + table->memory.to_string() + " + " +
                shm_.size->plus(included.times(-1)).to_string() + " /dev/shm";
      }
      std::string arithmetic;
      if (loader && loader_->memory > need.memory) {
        arithmetic = "data loader: " + loader_->detail +
                     (table ? "; " + profile_->name + " table " + table->memory.to_string() : "");
        need.memory = loader_->memory;
        basis = "data loader";
      }
      if (target_.explain && group.app) explain_floors(table, need, arithmetic.empty() ? basis : arithmetic);
      needs_.push_back({need, basis, arithmetic});
      const GroupNeed* group_need = &needs_.back();
      for (const ContainerView* holder : group.holders) {
        // Split the group's needs by each holder's GPUs; rounding up keeps
        // the sum at or above the group's need.
        auto share = [&](const Quantity& total, const Quantity& granule) {
          return holder->gpus == group.gpus ? total : total.share_ceil(holder->gpus, group.gpus, granule);
        };
        const Shortfall base{holder, group.gpus, group_need, nullptr, {}, {}, {}};
        if (table) add_shortfall(base, kCpu, share(need.cpu, Quantity::from_milli(1)));
        add_shortfall(base, kMemory, share(need.memory, Quantity::from_bytes(1 << 20)));
        if (need.storage) add_shortfall(base, kStorage, share(*need.storage, Quantity::from_bytes(1 << 20)));
      }
    }
  }

  // Each GPU container's requests once sized: on the validating pass of
  // a mutated pod, the values it runs with.
  void explain_containers() {
    // In mutate mode the pod runs with these; otherwise it is denied or
    // warned until its author sets them.
    const std::string requests_word =
        target_.mode == Mode::kMutate && !view_.opted_out ? "requests it runs with" : "requests it needs";
    for (const Group& group : groups_) {
      for (const ContainerView* holder : group.holders) {
        std::vector<std::string> values;
        for (const std::string* resource : {&kCpu, &kMemory, &kStorage}) {
          if (auto value = sized_request(*holder, *resource)) values.push_back(*resource + " " + value->to_string());
        }
        const std::string share = holder->gpus == group.gpus ? gpus_text(group.gpus)
                                                             : std::to_string(holder->gpus) + " of " + gpus_text(group.gpus);
        decision_.rules.push_back({"container " + in_quotes(holder->name), values.empty() ? "-" : join(values, ", "),
                                   requests_word + " (" + share + (group.app ? "" : ", init container") + ")"});
      }
    }
  }

  // The table, /dev/shm and data-loader rows and which one binds memory.
  void explain_floors(const std::optional<Requirement>& table, const Requirement& need, const std::string& basis) {
    const std::string gpus = gpus_text(groups_.front().gpus);
    if (table) {
      std::string floor = "cpu " + table->cpu.to_string() + ", memory " + table->memory.to_string();
      if (table->storage) floor += ", ephemeral-storage " + table->storage->to_string();
      decision_.rules.push_back({"table", floor, profile_->name + " row for " + gpus});
    } else {
      decision_.rules.push_back({"table", "-", "the " + profile_text() + " has no table"});
    }
    const SharedMemoryPolicy& rule = policy_.shared_memory;
    if (!shm_.applies) {
      const auto& profiles = rule.profiles;
      const bool listed = std::find(profiles.begin(), profiles.end(), profile_->name) != profiles.end();
      decision_.rules.push_back({"/dev/shm", "-", listed ? "not checked: /dev/shm is not a memory-backed emptyDir"
                                                         : "not checked: the " + profile_text() +
                                                               " is not in sharedMemory.profiles"});
    } else {
      // What happens to a /dev/shm that needs fixing depends on the mode.
      const std::string fixed = target_.mode == Mode::kAudit ? "audit: would deny"
                                : target_.mode == Mode::kEnforce ? "denied (enforce mode)"
                                : view_.opted_out                ? "denied (opted out of mutation)"
                                                                 : "gpu-sizer sets " + rule.size.to_string();
      std::string found = shm_.add_volume ? "none found: " + fixed
                          : shm_.enlarge  ? "sizeLimit " + shm_.size_limit->to_string() + " below the minimum: " + fixed
                          : shm_.size     ? "sizeLimit " + shm_.size->to_string()
                                          : "no sizeLimit (bounded by the memory limits)";
      if (!shm_.unmounted.empty() && !shm_.add_volume) found += "; not mounted in every GPU container: " + fixed;
      std::string floor = shm_.size ? "/dev/shm " + shm_.size->to_string() : "/dev/shm unbounded";
      if (table && shm_.size && *shm_.size > rule.table_includes) {
        floor += ", memory " + table->memory.plus(shm_.size->plus(rule.table_includes.times(-1))).to_string();
      }
      decision_.rules.push_back({"/dev/shm", floor, found + "; minimum " + rule.minimum.to_string() + ", the table includes " +
                                                        rule.table_includes.to_string()});
    }
    if (loader_) {
      decision_.rules.push_back({"data loader", "memory " + loader_->memory.to_string(), loader_->detail});
    } else if (!loader_problem_.empty()) {
      decision_.rules.push_back({"data loader", "-", loader_problem_});
    } else {
      decision_.rules.push_back({"data loader", "-", std::string("no annotation ") + kDataLoaderKey});
    }
    decision_.rules.push_back({"binding", "memory " + need.memory.to_string(), basis});
  }

  void add_shortfall(const Shortfall& base, const std::string& resource, const Quantity& need) {
    const auto request = base.container->effective_request(resource);
    const auto limit = base.container->limit(resource);
    if (request && *request >= need && (!limit || *limit >= need)) return;
    Shortfall shortfall = base;
    shortfall.resource = &resource;
    shortfall.need = need;
    shortfall.request = request;
    shortfall.limit = limit;
    shortfalls_.push_back(std::move(shortfall));
  }

  bool denies_memory(const Shortfall& s) const {
    return *s.resource == kMemory && s.group_gpus >= policy_.deny_from_gpus;
  }


  static std::string holder_gpus(const Shortfall& s) {
    return s.container->gpus == s.group_gpus ? gpus_text(s.group_gpus)
                                             : std::to_string(s.container->gpus) + " of " + gpus_text(s.group_gpus);
  }

  void raise_shortfalls() {
    std::vector<std::string> per_container;
    const ContainerView* current = nullptr;
    std::vector<std::string> tokens;  // where the patch sets a value
    for (const Shortfall& s : shortfalls_) {
      const bool raise_request = !s.request || *s.request < s.need;
      const Quantity new_request = raise_request ? s.need : *s.request;
      const std::string new_text = new_request.to_string();
      tokens = s.container->path;
      tokens.insert(tokens.end(), {"resources", "requests", *s.resource});
      std::string change;
      if (raise_request) {
        patch_.set(tokens, new_text);
        decision_.raised.push_back({*s.resource, s.request ? new_request.plus(s.request->times(-1)) : new_request});
        const Quantity* written = s.container->requests.find(*s.resource);
        change = *s.resource + " request " + (written ? written->to_string() : "unset") + "->" + new_text;
      }
      // A request above its limit is invalid: a limit below the new request
      // rises with it.
      if (s.limit && *s.limit < new_request) {
        tokens[tokens.size() - 2] = "limits";
        patch_.set(tokens, new_text);
        change += (raise_request ? ", limit " : *s.resource + " limit ") + s.limit->to_string() + "->" + new_text;
      }
      decision_.warnings.push_back(
          fit_warning(target_.label, s.container->name, change + " (" + holder_gpus(s) + ", " + basis_of(s) + ")"));
      if (s.container != current) {
        per_container.push_back(s.container->name + ": " + change);
        current = s.container;
      } else {
        per_container.back() += ", " + change;
      }
    }
    add_loader_note();
    if (shm_.applies && shm_.fix_needed()) per_container.push_back(fix_shm());
    if (per_container.empty()) return;
    const std::string sized = profile_text() + ", " + gpus_text(decision_.gpus) + ": " +
                              join_capped(per_container, "; ", kSizedAnnotationBytes, "containers");
    decision_.changes = std::move(per_container);
    tokens = target_.ref.path;
    tokens.insert(tokens.end(), {"metadata", "annotations", kSizedKey});
    patch_.set(tokens, sized);
  }

  // Adds, enlarges or mounts the /dev/shm volumes, one warning for each;
  // returns the change for the sized annotation.
  std::string fix_shm() {
    const SharedMemoryPolicy& rule = policy_.shared_memory;
    const std::string size = rule.size.to_string();
    std::vector<std::string> changes;
    auto warn = [&](const std::string& what) {
      decision_.warnings.push_back(fit(target_.label + "/dev/shm: " + what + " (" + profile_text() + ")"));
    };
    std::vector<std::string> names;
    for (const ContainerView* container : shm_.unmounted) names.push_back(container->name);
    const std::string listed = join_capped(names, ", ", 512, "containers");
    const std::string where =
        names.size() == 1 ? in_quotes(names.front()) : std::to_string(names.size()) + " GPU containers";
    if (shm_.add_volume) {
      std::string volume = R"({"name":)";
      append_json_string(volume, shm_.volume);
      volume += R"(,"emptyDir":{"medium":"Memory","sizeLimit":)";
      append_json_string(volume, size);
      volume += "}}";
      patch_.append_json(volume_lists().front().first, volume);
      decision_.raised.push_back({"shm", rule.size});
      changes.push_back("/dev/shm: added " + size + " (" + listed + ")");
      warn("added " + size + " memory-backed emptyDir " + in_quotes(shm_.volume) + " to " + where);
    }
    auto enlarge = [&](const std::string& name, const std::vector<std::string>& path, const Quantity& limit) {
      std::vector<std::string> tokens = path;
      tokens.insert(tokens.end(), {"emptyDir", "sizeLimit"});
      patch_.set(tokens, size);
      decision_.raised.push_back({"shm", rule.size.plus(limit.times(-1))});
      changes.push_back("/dev/shm " + in_quotes(name) + ": sizeLimit " + limit.to_string() + "->" + size);
      warn("emptyDir " + in_quotes(name) + " sizeLimit " + limit.to_string() + "->" + size + ", below the " +
           rule.minimum.to_string() + " minimum");
    };
    if (shm_.enlarge) enlarge(shm_.volume, shm_.volume_path, *shm_.size_limit);
    for (const auto& other : shm_.small_others) enlarge(other.name, other.path, other.size_limit);
    if (!shm_.add_volume && !names.empty()) {
      changes.push_back("/dev/shm: mounted " + in_quotes(shm_.volume) + " in " + listed);
      warn("mounted emptyDir " + in_quotes(shm_.volume) + " in " + where);
    }
    std::string mount = R"({"name":)";
    append_json_string(mount, shm_.volume);
    mount += R"(,"mountPath":"/dev/shm"})";
    for (const ContainerView* container : shm_.unmounted) {
      std::vector<std::string> tokens = container->path;
      tokens.push_back("volumeMounts");
      patch_.append_json(tokens, mount);
    }
    return join(changes, "; ");
  }

  // When the data loader set a memory floor that some container is below,
  // one warning shows its arithmetic (the per-container lines say "data
  // loader" to stay under 120 characters).
  void add_loader_note() {
    const bool below = std::any_of(shortfalls_.begin(), shortfalls_.end(), [](const Shortfall& s) {
      return *s.resource == kMemory && !s.group->arithmetic.empty();
    });
    if (!below || !loader_) return;
    decision_.warnings.push_back(fit(target_.label + "data loader memory floor " + loader_->memory.to_string() + " = " +
                                     loader_->brief + " (" + kDataLoaderKey + ")"));
  }

  // Why a resource needs what it needs: the profile, or the rule beyond the
  // table that raised the memory floor.
  std::string basis_of(const Shortfall& s) const { return *s.resource == kMemory ? s.group->basis : profile_text(); }

  // What a container asks for once sized: its effective request, or the
  // need gpu-sizer raises it to (in every mode: node fit judges the pod as
  // it must run, not as written).
  std::optional<Quantity> sized_request(const ContainerView& c, const std::string& resource) const {
    std::optional<Quantity> request = c.effective_request(resource);
    for (const Shortfall& s : shortfalls_) {
      if (s.container == &c && *s.resource == resource && (!request || *request < s.need)) request = s.need;
    }
    return request;
  }

  // The scheduler's view of the sized pod: its app containers and sidecars
  // together, or its largest init container.
  PodRequest pod_request() const {
    PodRequest app{decision_.gpus};
    PodRequest largest_init;
    auto add = [&](Quantity& total, const ContainerView& c, const std::string& resource) {
      if (auto request = sized_request(c, resource)) total = total.plus(*request);
    };
    for (const ContainerView& c : view_.app) {
      add(app.cpu, c, kCpu);
      add(app.memory, c, kMemory);
      add(app.ephemeral_storage, c, kStorage);
    }
    for (const ContainerView& c : view_.init) {
      PodRequest one;
      add(one.cpu, c, kCpu);
      add(one.memory, c, kMemory);
      add(one.ephemeral_storage, c, kStorage);
      largest_init.cpu = std::max(largest_init.cpu, one.cpu);
      largest_init.memory = std::max(largest_init.memory, one.memory);
      largest_init.ephemeral_storage = std::max(largest_init.ephemeral_storage, one.ephemeral_storage);
    }
    return {app.gpus, std::max(app.cpu, largest_init.cpu), std::max(app.memory, largest_init.memory),
            std::max(app.ephemeral_storage, largest_init.ephemeral_storage)};
  }

  // Node fit of the sized pod against the policy's node pools.
  void check_nodes() {
    const NodeFitPolicy& rule = policy_.node_fit;
    if (rule.pools.empty()) {
      if (target_.explain) decision_.rules.push_back({"node fit", "-", "no node pools in the policy (nodeFit.pools)"});
      return;
    }
    const PodRequest request = pod_request();
    node_fit_ = check_node_fit(rule, request, view_.selection.labels, view_.node_selector);
    if (target_.explain) {
      const std::string pool = node_fit_->pool ? "pool \"" + node_fit_->pool->name + "\"" : "some pool";
      decision_.rules.push_back({"node fit",
                                 gpus_text(request.gpus) + ", cpu " + request.cpu.to_string() + ", memory " +
                                     request.memory.to_string(),
                                 node_fit_->verdict == NodeFit::Verdict::kFits ? "fits a node of " + pool
                                                                               : node_fit_->message});
    }
  }

  // The GPU models the pod may run on, with where each came from: what the
  // scheduler enforces first (nodeSelector, then required node affinity),
  // then the annotation gpu-sizer.io/gpu, then the pod's node pool.
  std::vector<std::pair<std::string, std::string>> gpu_products() const {
    const std::string& label = policy_.gpu_memory.product_label;
    if (auto product = view_.node_selector.find(label); product != view_.node_selector.end()) {
      return {{product->second, "nodeSelector " + label + "=" + product->second}};
    }
    std::vector<std::pair<std::string, std::string>> products;
    for (const auto& product : view_.affinity_products) {
      products.emplace_back(product, "node affinity " + label + " In " + product);
    }
    if (!products.empty()) return products;
    if (auto gpu = view_.selection.annotations.find(kGpuKey); gpu != view_.selection.annotations.end()) {
      return {{gpu->second, std::string("annotation ") + kGpuKey + "=" + gpu->second}};
    }
    if (node_fit_ && node_fit_->pool && !node_fit_->pool->gpu_product.empty()) {
      products.emplace_back(node_fit_->pool->gpu_product, "node pool \"" + node_fit_->pool->name + "\"");
    }
    return products;
  }

  // GPU memory fit of the model the annotation describes, on every GPU
  // model the pod may get: denied only when it fits none of them (and
  // every one is known).
  void check_model() {
    const auto annotation = view_.selection.annotations.find(kModelKey);
    if (annotation == view_.selection.annotations.end() || groups_.empty() || !groups_.front().app) {
      if (target_.explain) {
        decision_.rules.push_back({"GPU memory", "-",
                                   annotation == view_.selection.annotations.end()
                                       ? std::string("no annotation ") + kModelKey
                                       : "no app container holds GPUs"});
      }
      return;
    }
    const GpuMemoryPolicy& rule = policy_.gpu_memory;
    const bool infer = std::find(rule.infer_profiles.begin(), rule.infer_profiles.end(), profile_->name) !=
                       rule.infer_profiles.end();
    const int64_t gpus = groups_.front().gpus;
    auto spec = parse_model(annotation->second, rule, infer ? ModelMode::kInfer : ModelMode::kTrain, gpus);
    if (!spec) {
      // Denied at /validate; it changes no patch, so /mutate goes on.
      const std::string problem = target_.description + ": annotation " + kModelKey + " " + spec.error();
      if (endpoint_ == Endpoint::kValidate) view_.problems.push_back(problem);
      if (target_.explain) decision_.rules.push_back({"GPU memory", "-", problem});
      return;
    }
    std::vector<VramCheck> checks;
    std::vector<const GpuModel*> checked;  // each model once, however often affinity lists it
    std::vector<std::string> unknown;
    for (const auto& [product, source] : gpu_products()) {
      const GpuModel* gpu = product.find("-MIG-") == std::string::npos ? rule.find_gpu(product) : nullptr;
      if (!gpu) {
        unknown.push_back(product);
      } else if (std::find(checked.begin(), checked.end(), gpu) == checked.end()) {
        checked.push_back(gpu);
        checks.push_back(check_vram(rule, spec.value(), gpus, *gpu, source));
      }
    }
    if (checks.empty()) {
      model_notes_.push_back(unknown.empty() ? "model not checked: GPU model unknown; set nodeSelector " +
                                                   rule.product_label + " or annotation " + kGpuKey
                                             : "model not checked: GPU " + in_quotes(unknown.front()) +
                                                   " is not in gpuMemory.gpus");
      if (target_.explain) decision_.rules.push_back({"GPU memory", "-", model_notes_.back()});
      return;
    }
    const auto fits = [](const VramCheck& check) { return check.verdict == VramVerdict::kFits; };
    const auto too_large = [](const VramCheck& check) { return check.verdict == VramVerdict::kTooLarge; };
    auto worst = std::find_if(checks.begin(), checks.end(), too_large);
    if (worst == checks.end()) worst = std::find_if_not(checks.begin(), checks.end(), fits);
    // A job spanning pods shards ZeRO over all of their GPUs, which this
    // pod alone does not show.
    const ModelSpec& model = spec.value();
    const std::string ranks_hint = model.mode == ModelMode::kTrain && model.zero > 0 && model.ranks == 0
                                       ? " If the job spans several pods, set ranks=<total GPUs> in " +
                                             std::string(kModelKey) + "."
                                       : "";
    if (std::all_of(checks.begin(), checks.end(), too_large) && unknown.empty() && rule.action == CheckAction::kDeny) {
      model_denial_ = {target_.description + ": " + checks.front().message + ranks_hint, checks.front().brief};
    } else if (worst != checks.end()) {
      model_notes_.push_back(worst->brief);
    }
    if (target_.explain) {
      const VramCheck& shown = worst != checks.end() ? *worst : checks.front();
      decision_.rules.push_back({"GPU memory", gb_text(shown.need.total) + " GB per GPU", shown.message + ranks_hint});
    }
  }

  std::string opt_out_fix(const char* what) const {
    // Only mutate mode sets values; in enforce and audit the user does.
    return view_.opted_out && target_.mode == Mode::kMutate
               ? ", or remove annotation " + std::string(kMutateOptOutKey) + "=false so gpu-sizer sets " + what
               : "";
  }

  std::string denial(const Shortfall& s) const {
    const ContainerView& c = *s.container;
    std::string found = "request " + show(s.request);
    if (s.limit) found += ", limit " + s.limit->to_string();
    std::string fix = "set memory to " + s.need.to_string();
    for (const Shortfall& other : shortfalls_) {
      if (other.container == s.container && *other.resource == kCpu) fix += " and cpu to " + other.need.to_string();
    }
    fix += " (OSMO: --set " + set_hint(*profile_, s.group_gpus, s.group->need) + ")" + opt_out_fix("them");
    const std::string why = s.group->arithmetic.empty() ? basis_of(s) : s.group->arithmetic;
    return target_.description + " container " + in_quotes(c.name) + ": " + holder_gpus(s) + " need memory >= " +
           s.need.to_string() + " (" + why + "), found " + found + "; " + fix;
  }

  std::string short_finding(const Shortfall& s) const {
    return *s.resource + " " + show(s.request) + " is below " + s.need.to_string() + " for " +
           holder_gpus(s) + " (" + basis_of(s) + ")";
  }

  // What is wrong with /dev/shm and what to set, in full and in brief.
  std::pair<std::string, std::string> shm_finding() const {
    const SharedMemoryPolicy& rule = policy_.shared_memory;
    const std::string needs = "the " + profile_text() + " needs /dev/shm >= " + rule.minimum.to_string() +
                              " (torchrun and DataLoader workers abort below it)";
    std::vector<std::string> names;
    for (const ContainerView* container : shm_.unmounted) names.push_back(in_quotes(container->name));
    // A pod may have thousands of containers: the names are capped.
    const std::string containers =
        (names.size() == 1 ? "container " : "containers ") + join_capped(names, ", ", 512, "containers");
    const std::string size = rule.size.to_string();
    if (shm_.add_volume) {
      return {target_.description + ": /dev/shm is not set in " + containers + " (runtime default 64Mi); " + needs +
                  "; add to " + field_path(volume_lists().front().first) + " {name: " + shm_.volume +
                  ", emptyDir: {medium: Memory, sizeLimit: " + size + "}} and mount it at /dev/shm in " + containers +
                  opt_out_fix("it"),
              "/dev/shm unset in " + containers + ", " + profile_text() + " needs >= " + rule.minimum.to_string()};
    }
    std::vector<std::string> found;  // what is wrong
    std::vector<std::string> fixes;  // what to set
    auto small = [&](const std::string& name, const std::vector<std::string>& path, const Quantity& limit) {
      const std::string field = field_path(path);
      found.push_back("/dev/shm (volume " + in_quotes(name) + ", " + field + ") sizeLimit " + limit.to_string() +
                      " is below the minimum");
      fixes.push_back("set " + field + ".emptyDir.sizeLimit to " + size);
    };
    if (shm_.enlarge) small(shm_.volume, shm_.volume_path, *shm_.size_limit);
    for (const auto& other : shm_.small_others) small(other.name, other.path, other.size_limit);
    if (!names.empty()) {
      found.push_back("/dev/shm is not mounted in " + containers);
      fixes.push_back("mount volume " + in_quotes(shm_.volume) + " at /dev/shm in " + containers);
    }
    const std::string brief = found.front().starts_with("/dev/shm (volume")
                                  ? "/dev/shm sizeLimit below " + rule.minimum.to_string() + " (" + profile_text() + ")"
                                  : "/dev/shm not mounted in " + containers + " (" + profile_text() + ")";
    return {target_.description + ": " + join(found, "; ") + "; " + needs + "; " + join(fixes, " and ") +
                opt_out_fix("it"),
            brief};
  }

  // The validating endpoint: deny what must not run, warn about the rest;
  // in audit mode only say what would happen.
  void report() {
    const bool audit = target_.mode == Mode::kAudit;
    const std::string would_deny = "audit: would deny: ";
    auto deny = [&](const std::string& full, const std::string& brief, const char* reason) {
      if (audit) {
        decision_.warnings.push_back(fit(would_deny + brief));
      } else {
        decision_.denials.push_back(full);
        decision_.denial_reasons.push_back(reason);
      }
    };
    for (const auto& problem : view_.problems) deny(problem, problem, "invalid");
    if (!profile_problem_.empty()) deny(profile_problem_, profile_problem_, "unknown_profile");
    for (std::size_t i = 0; i < violations_.size(); ++i) deny(violations_[i], short_violations_[i], "max_gpus");
    add_loader_note();
    for (const Shortfall& s : shortfalls_) {
      if (denies_memory(s) && !audit) {
        deny(denial(s), "", "memory");
      } else {
        const std::string prefix = !audit ? "" : denies_memory(s) ? would_deny : "audit: would raise: ";
        decision_.warnings.push_back(fit_warning(prefix + target_.label, s.container->name, short_finding(s)));
      }
    }
    if (shm_.applies && shm_.fix_needed()) {
      const auto [full, brief] = shm_finding();
      deny(full, target_.label + brief, "shm");
    }
    for (const auto& note : shm_notes_) decision_.warnings.push_back(fit(note));
    if (model_denial_) deny(model_denial_->first, target_.label + model_denial_->second, "vram");
    for (const auto& note : model_notes_) decision_.warnings.push_back(fit(target_.label + note));
    if (node_fit_ && node_fit_->verdict == NodeFit::Verdict::kNoFit) {
      if (policy_.node_fit.action == CheckAction::kDeny) {
        deny(target_.description + ": " + node_fit_->message, target_.label + node_fit_->brief, "node_fit");
      } else {
        decision_.warnings.push_back(fit(target_.label + node_fit_->brief));
      }
    }
  }

  const Policy& policy_;
  Endpoint endpoint_;
  const PodTarget& target_;
  PatchBuilder& patch_;
  PodView view_;
  PodDecision decision_;
  const Profile* profile_ = nullptr;
  std::vector<Group> groups_;
  std::vector<Shortfall> shortfalls_;
  // Each group's needs and why, in a deque so shortfalls can point at them.
  std::deque<GroupNeed> needs_;
  ShmPlan shm_;
  std::vector<std::string> shm_notes_;  // warnings: a /dev/shm not checked
  std::optional<DataLoaderFloor> loader_;
  std::string loader_problem_;  // the annotation is malformed or absurd
  std::optional<NodeFit> node_fit_;
  std::optional<std::pair<std::string, std::string>> model_denial_;  // in full and in brief
  std::vector<std::string> model_notes_;  // warnings: tight, or not checked
  std::string profile_problem_;  // the profile label names no profile
  std::vector<std::string> violations_;
  std::vector<std::string> short_violations_;
};

}  // namespace

PodDecision decide_pod(const Policy& policy, Endpoint endpoint, const PodTarget& target, PatchBuilder& patch) {
  return PodDecider(policy, endpoint, target, patch).decide();
}

}  // namespace gpusizer
