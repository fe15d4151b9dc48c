#include "gpusizer/pod_decision.h"

#include <algorithm>
#include <map>
#include <optional>

#include "gpusizer/sizing.h"
#include "gpusizer/strings.h"

namespace gpusizer {

using nlohmann::json;

Result<Quantity> quantity_from_json(const json& value) {
  if (value.is_string()) return Quantity::parse(value.get_ref<const std::string&>());
  if (value.is_number()) return Quantity::parse(value.dump());
  return Error{"must be a quantity such as \"64Gi\" or 4, found " + std::string(value.type_name())};
}

namespace {

// More GPUs than this in one container is a typo, not a machine; refusing it
// keeps all arithmetic far from overflow.
constexpr int64_t kMaxGpusPerContainer = 1 << 20;
// Warnings past 120 characters may be cut by kubectl; keep each below.
constexpr std::size_t kWarningLimit = 119;

const std::string kCpu = "cpu";
const std::string kMemory = "memory";
const std::string kStorage = "ephemeral-storage";

using QuantityMap = std::map<std::string, Quantity, std::less<>>;

struct ContainerView {
  std::string name;
  std::vector<std::string> path;  // tokens to the container in the reviewed object
  QuantityMap requests;
  QuantityMap limits;
  int64_t gpus = 0;

  // What the container asks for: the request, or the limit it defaults to.
  std::optional<Quantity> effective_request(const std::string& resource) const {
    if (auto it = requests.find(resource); it != requests.end()) return it->second;
    if (auto it = limits.find(resource); it != limits.end()) return it->second;
    return std::nullopt;
  }
  std::optional<Quantity> limit(const std::string& resource) const {
    auto it = limits.find(resource);
    return it == limits.end() ? std::nullopt : std::optional<Quantity>(it->second);
  }
};

struct PodView {
  std::vector<ContainerView> app;   // containers and restartable init sidecars
  std::vector<ContainerView> init;  // ordinary init containers: run before, one at a time
  std::vector<std::string> problems;
  bool gpu_problem = false;  // a problem in a GPU field: the pod may hold GPUs
  SelectionInput selection;
  bool opted_out = false;
};

std::map<std::string, std::string, std::less<>> string_map(const json& object) {
  std::map<std::string, std::string, std::less<>> out;
  if (!object.is_object()) return out;
  for (const auto& [key, value] : object.items()) {
    if (value.is_string()) out.emplace(key, value.get<std::string>());
  }
  return out;
}

std::string quoted(const std::string& text) { return "\"" + text + "\""; }

class PodReader {
 public:
  PodReader(const Policy& policy, const PodTarget& target) : policy_(policy), target_(target) {}

  PodView read() {
    const json& pod = target_.pod;
    const json empty = json::object();
    const json& metadata = pod.contains("metadata") ? pod["metadata"] : empty;
    view_.selection.labels = string_map(metadata.value("labels", empty));
    view_.selection.annotations = string_map(metadata.value("annotations", empty));
    std::string name = metadata.contains("name") && metadata["name"].is_string() ? metadata["name"].get<std::string>() : "";
    if (name.empty() && metadata.contains("generateName") && metadata["generateName"].is_string()) {
      name = metadata["generateName"].get<std::string>();
    }
    view_.selection.name = name;
    auto opt_out = view_.selection.annotations.find(kMutateOptOutKey);
    view_.opted_out = opt_out != view_.selection.annotations.end() && opt_out->second == "false";

    if (!pod.contains("spec") || !pod["spec"].is_object()) {
      problem("spec", "is missing or not an object");
      return std::move(view_);
    }
    const json& spec = pod["spec"];
    if (!spec.contains("containers") || !spec["containers"].is_array()) {
      problem("spec.containers", "is missing or not a list");
      return std::move(view_);
    }
    read_list(spec, "containers", /*init=*/false);
    if (spec.contains("initContainers") && !spec["initContainers"].is_null()) {
      if (spec["initContainers"].is_array()) {
        read_list(spec, "initContainers", /*init=*/true);
      } else {
        problem("spec.initContainers", "is not a list");
      }
    }
    return std::move(view_);
  }

 private:
  void problem(const std::string& field, const std::string& what, bool gpu_field = false) {
    view_.problems.push_back(target_.description + ": " + field + " " + what);
    view_.gpu_problem = view_.gpu_problem || gpu_field;
  }

  void read_list(const json& spec, const std::string& key, bool init) {
    const json& list = spec[key];
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string field = "spec." + key + "[" + std::to_string(i) + "]";
      const json& item = list[i];
      if (!item.is_object()) {
        problem(field, "is not an object");
        continue;
      }
      ContainerView container;
      container.name = item.contains("name") && item["name"].is_string() ? item["name"].get<std::string>() : field;
      container.path = target_.path;
      container.path.insert(container.path.end(), {"spec", key, std::to_string(i)});
      read_resources(item, field, container);
      // Sidecars (init containers that keep running) hold resources alongside
      // the app containers, so they count with them.
      const bool sidecar = init && item.contains("restartPolicy") && item["restartPolicy"] == "Always";
      (init && !sidecar ? view_.init : view_.app).push_back(std::move(container));
    }
  }

  void read_resources(const json& item, const std::string& field, ContainerView& container) {
    if (!item.contains("resources") || item["resources"].is_null()) return;
    const json& resources = item["resources"];
    if (!resources.is_object()) {
      problem(field + ".resources", "is not an object");
      return;
    }
    read_quantities(resources, "requests", field, container.requests);
    read_quantities(resources, "limits", field, container.limits);
    for (const auto& resource : policy_.gpu_resources) {
      container.gpus += gpu_count(container, resource, field);
    }
  }

  void read_quantities(const json& resources, const std::string& key, const std::string& field, QuantityMap& out) {
    if (!resources.contains(key) || resources[key].is_null()) return;
    const json& map = resources[key];
    const std::string map_field = field + ".resources." + key;
    if (!map.is_object()) {
      problem(map_field, "is not an object");
      return;
    }
    for (const auto& [resource, value] : map.items()) {
      const bool gpu = policy_.is_gpu_resource(resource);
      if (!gpu && resource != kCpu && resource != kMemory && resource != kStorage) continue;
      auto quantity = quantity_from_json(value);
      if (!quantity) {
        problem(map_field + "." + resource, quantity.error(), gpu);
      } else if (quantity.value().is_negative()) {
        problem(map_field + "." + resource, "must not be negative, found " + quantity.value().to_string(), gpu);
      } else {
        out.emplace(resource, quantity.value());
      }
    }
  }

  int64_t gpu_count(const ContainerView& container, const std::string& resource, const std::string& field) {
    const auto request = container.requests.find(resource);
    const auto limit = container.limits.find(resource);
    const bool has_request = request != container.requests.end();
    const bool has_limit = limit != container.limits.end();
    if (!has_request && !has_limit) return 0;
    const std::string where = field + ".resources";
    if (has_request && has_limit && request->second != limit->second) {
      problem(where, resource + " request " + request->second.to_string() + " and limit " +
                         limit->second.to_string() + " differ; GPUs are not overcommitted: set both to the same number",
              true);
      return 0;
    }
    const Quantity& count = has_limit ? limit->second : request->second;
    if (!count.is_whole()) {
      problem(where, resource + " must be a whole number of GPUs, found " + count.to_string(), true);
      return 0;
    }
    if (count.value_ceil() > kMaxGpusPerContainer) {
      problem(where, resource + " asks for " + count.to_string() + " GPUs, more than any node has", true);
      return 0;
    }
    return count.value_ceil();
  }

  const Policy& policy_;
  const PodTarget& target_;
  PodView view_;
};

// One resource of one container below what its share of the GPUs needs.
struct Shortfall {
  const ContainerView* container;
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
    view_ = PodReader(policy_, target_).read();
    int64_t app_gpus = 0;
    const ContainerView* largest_init = nullptr;
    for (const auto& c : view_.app) app_gpus += c.gpus;
    for (const auto& c : view_.init) {
      if (c.gpus > 0 && (!largest_init || c.gpus > largest_init->gpus)) largest_init = &c;
    }
    const int64_t init_gpus = largest_init ? largest_init->gpus : 0;
    decision_.gpus = std::max(app_gpus, init_gpus);
    if (decision_.gpus == 0 && !view_.gpu_problem) return std::move(decision_);

    // The containers that hold the pod's GPUs get its CPU and memory. An
    // init container holds them only when it asks for more than all app
    // containers together (it runs alone, before them).
    if (app_gpus >= init_gpus) {
      for (const auto& c : view_.app) {
        if (c.gpus > 0) holders_.push_back(&c);
      }
    } else {
      holders_.push_back(largest_init);
    }

    auto choice = select_profile(policy_, view_.selection);
    if (!choice) {
      view_.problems.push_back(target_.description + ": " + choice.error());
    } else if (decision_.gpus > 0) {
      profile_ = choice.value().profile;
      decision_.profile = profile_->name;
      decision_.profile_reason = choice.value().reason;
      check_gpu_limit();
      find_shortfalls();
    }

    if (endpoint_ == Endpoint::kMutate) {
      if (target_.mode == Mode::kMutate && !view_.opted_out && view_.problems.empty()) raise_shortfalls();
    } else {
      report();
    }
    return std::move(decision_);
  }

 private:
  std::string gpus_text() const {
    return std::to_string(decision_.gpus) + (decision_.gpus == 1 ? " GPU" : " GPUs");
  }
  std::string profile_text() const { return profile_->name + " profile"; }

  void check_gpu_limit() {
    if (!profile_->max_gpus || decision_.gpus <= *profile_->max_gpus) return;
    violations_.push_back(
        target_.description + ": the " + profile_text() + " is a single-pod stage allowing at most " +
        std::to_string(*profile_->max_gpus) + " GPU(s), found " + gpus_text() + " (" +
        decision_.profile_reason + "); set the GPU count to " + std::to_string(*profile_->max_gpus) +
        " (OSMO: --set " + set_hint(*profile_, *profile_->max_gpus) + ")");
    short_violations_.push_back("the " + profile_text() + " allows at most " +
                                std::to_string(*profile_->max_gpus) + " GPU(s), found " + gpus_text());
  }

  void find_shortfalls() {
    const auto need = required_resources(*profile_, decision_.gpus);
    if (!need) return;
    for (const ContainerView* holder : holders_) {
      // Split the pod's needs by each holder's GPUs; rounding up keeps the
      // sum at or above the pod's need.
      auto share = [&](const Quantity& total, const Quantity& granule) {
        return holder->gpus == decision_.gpus ? total : total.share_ceil(holder->gpus, decision_.gpus, granule);
      };
      add_shortfall(*holder, kCpu, share(need->cpu, Quantity::from_milli(1)));
      add_shortfall(*holder, kMemory, share(need->memory, Quantity::from_bytes(1 << 20)));
      if (need->storage) add_shortfall(*holder, kStorage, share(*need->storage, Quantity::from_bytes(1 << 20)));
    }
  }

  void add_shortfall(const ContainerView& container, const std::string& resource, const Quantity& need) {
    const auto request = container.effective_request(resource);
    const auto limit = container.limit(resource);
    if (request && *request >= need && (!limit || *limit >= need)) return;
    shortfalls_.push_back({&container, &resource, need, request, limit});
  }

  bool denies_memory(const Shortfall& s) const {
    return *s.resource == kMemory && decision_.gpus >= policy_.deny_from_gpus;
  }

  std::string holder_gpus(const ContainerView& container) const {
    return container.gpus == decision_.gpus ? gpus_text()
                                            : std::to_string(container.gpus) + " of " + gpus_text();
  }

  void raise_shortfalls() {
    std::vector<std::string> per_container;
    const ContainerView* current = nullptr;
    for (const Shortfall& s : shortfalls_) {
      const bool raise_request = !s.request || *s.request < s.need;
      const Quantity new_request = raise_request ? s.need : *s.request;
      std::vector<std::string> resources = s.container->path;
      resources.push_back("resources");
      std::vector<std::string> parts;
      if (raise_request) {
        patch_.set(with(resources, {"requests", *s.resource}), new_request.to_string());
        const auto written = s.container->requests.find(*s.resource);
        parts.push_back(*s.resource + " request " +
                        (written == s.container->requests.end() ? "unset" : written->second.to_string()) + "->" +
                        new_request.to_string());
      }
      // A request above its limit is invalid: a limit below the new request
      // rises with it.
      if (s.limit && *s.limit < new_request) {
        patch_.set(with(resources, {"limits", *s.resource}), new_request.to_string());
        parts.push_back((raise_request ? "limit " : *s.resource + " limit ") + s.limit->to_string() + "->" +
                        new_request.to_string());
      }
      const std::string change = join(parts, ", ");
      decision_.warnings.push_back(fit_warning(
          "", s.container->name, change + " (" + holder_gpus(*s.container) + ", " + profile_text() + ")"));
      if (s.container != current) {
        per_container.push_back(s.container->name + ": " + change);
        current = s.container;
      } else {
        per_container.back() += ", " + change;
      }
    }
    if (per_container.empty()) return;
    decision_.changes = per_container;
    const std::string sized = profile_text() + ", " + gpus_text() + ": " + join(per_container, "; ");
    patch_.set(with(target_.path, {"metadata", "annotations", kSizedKey}), sized);
  }

  static std::vector<std::string> with(std::vector<std::string> base, std::initializer_list<std::string> more) {
    base.insert(base.end(), more);
    return base;
  }

  std::string denial(const Shortfall& s) const {
    const ContainerView& c = *s.container;
    std::string found = "request " + show(s.request);
    if (s.limit) found += ", limit " + s.limit->to_string();
    std::string fix = "set memory to " + s.need.to_string();
    for (const Shortfall& other : shortfalls_) {
      if (other.container == s.container && *other.resource == kCpu) fix += " and cpu to " + other.need.to_string();
    }
    fix += " (OSMO: --set " + set_hint(*profile_, decision_.gpus) + ")";
    if (view_.opted_out) {
      fix += ", or remove annotation " + std::string(kMutateOptOutKey) + "=false so gpu-sizer sets them";
    }
    return target_.description + " container " + quoted(c.name) + ": " + holder_gpus(c) + " need memory >= " +
           s.need.to_string() + " (" + profile_text() + "), found " + found + "; " + fix;
  }

  std::string short_finding(const Shortfall& s) const {
    return *s.resource + " " + show(s.request) + " is below " + s.need.to_string() + " for " +
           holder_gpus(*s.container) + " (" + profile_text() + ")";
  }

  // The validating endpoint: deny what must not run, warn about the rest;
  // in audit mode only say what would happen.
  void report() {
    const bool audit = target_.mode == Mode::kAudit;
    auto deny = [&](const std::string& full, const std::string& brief) {
      if (audit) {
        decision_.warnings.push_back(fit("audit: would deny: " + brief));
      } else {
        decision_.denials.push_back(full);
      }
    };
    for (const auto& problem : view_.problems) deny(problem, problem);
    for (std::size_t i = 0; i < violations_.size(); ++i) deny(violations_[i], short_violations_[i]);
    for (const Shortfall& s : shortfalls_) {
      if (denies_memory(s)) {
        deny(denial(s), fit_warning("", s.container->name, short_finding(s)));
      } else {
        decision_.warnings.push_back(
            fit_warning(audit ? "audit: would raise: " : "", s.container->name, short_finding(s)));
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
  std::vector<const ContainerView*> holders_;
  std::vector<Shortfall> shortfalls_;
  std::vector<std::string> violations_;
  std::vector<std::string> short_violations_;
};

}  // namespace

PodDecision decide_pod(const Policy& policy, Endpoint endpoint, const PodTarget& target, PatchBuilder& patch) {
  return PodDecider(policy, endpoint, target, patch).decide();
}

}  // namespace gpusizer
