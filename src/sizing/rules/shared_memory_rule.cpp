#include "gpusizer/sizing/rules/shared_memory_rule.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <unordered_set>

#include <yaml-cpp/yaml.h>

#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/policy_fields.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

using namespace policy_fields;  // NOLINT(google-build-using-namespace)

namespace {

void read_shm_serving(const YAML::Node& node, bool complete, ShmServingPolicy& out) {
  const std::string where = "sharedMemory.serving";
  const Block block(node, where, complete, {"profiles", "fromGpus", "minimum", "size", "tableIncludes"});
  block.read("profiles", [&](const auto& value, const auto& path) { out.profiles = read_string_list(value, path); });
  block.read("fromGpus", [&](const auto& value, const auto& path) { out.from_gpus = read_int(value, path, 1); });
  block.read("minimum", [&](const auto& value, const auto& path) { out.sizes.minimum = read_quantity(value, path); });
  block.read("size", [&](const auto& value, const auto& path) { out.sizes.size = read_quantity(value, path); });
  block.read("tableIncludes", [&](const auto& value, const auto& path) {
    out.sizes.table_includes = read_quantity(value, path, Zero::kAllowed);
  });
  out.sizes.serving = true;
  if (out.sizes.size < out.sizes.minimum) {
    fail(ProblemCode::kInconsistent, where + ".size", node["size"] ? node["size"] : node,
         "is below " + where + ".minimum " + out.sizes.minimum.to_string());
  }
}

// The pod's /dev/shm against the policy: the volume its GPU containers
// mount there (or the one to add), what is wrong with it, and its size once
// fixed. Problems reading it are findings of the rule's result.
struct ShmPlan {
  bool applies = false;
  std::string volume;                     // the /dev/shm volume, existing or to add
  const VolumeFacts* existing = nullptr;  // nullptr when it is added
  bool add_volume = false;
  bool enlarge = false;                          // its sizeLimit is below the minimum
  std::vector<const ContainerFacts*> unmounted;  // GPU containers not mounting it
  // Other memory emptyDirs some GPU container mounts at /dev/shm, below the
  // minimum: each is enlarged (or denied) like the first.
  std::vector<const VolumeFacts*> small_others;
  std::optional<Quantity> size;    // the pod's /dev/shm once fixed (all volumes); nullopt: unbounded
  std::vector<std::string> notes;  // warnings: a /dev/shm whose size is not checked

  bool fix_needed() const { return add_volume || enlarge || !unmounted.empty() || !small_others.empty(); }
};

class ShmPlanner {
 public:
  ShmPlanner(const RuleInput& input, RuleResult& result)
      : input_(input),
        rule_(input.policy.rule_settings.get<SharedMemoryPolicy>()),
        sizes_(sizes(input)),
        result_(result) {}

  ShmPlan plan() {
    const Phase* app = input_.phases.app();
    // No volume list: a container whose pod an operator builds (NIMService,
    // a KServe model block), with its /dev/shm.
    if (!app || !sizes_ || input_.pod.volume_lists.empty()) return std::move(plan_);
    std::string mounted;  // the volume some GPU container mounts at /dev/shm
    for (const ContainerFacts* holder : app->holders) {
      if (mounted.empty()) mounted = holder->shm_volume;
    }
    const std::string name = mounted.empty() ? rule_.volume_name : mounted;
    const VolumeFacts* volume = find_volume(name);
    if (!volume) {
      // A mount of a volume the pod lacks: the API server refuses the pod.
      if (!mounted.empty()) return std::move(plan_);
      plan_.add_volume = true;
    } else {
      if (!volume->memory_backed) {
        if (mounted.empty()) {
          problem(field_path(input_.pod.volume_path(*volume)) + " is volume \"" + name +
                  "\", the name gpu-sizer gives the /dev/shm it adds, and is not /dev/shm; rename it");
        } else {
          note_not_memory_backed(name);
        }
        return std::move(plan_);
      }
      if (!size_limit_read(*volume)) return std::move(plan_);
      plan_.existing = volume;
      plan_.enlarge = volume->size_limit && *volume->size_limit < sizes_->minimum;
    }
    plan_.applies = true;
    plan_.volume = name;
    plan_.size = plan_.add_volume || plan_.enlarge ? std::optional(sizes_->size) : volume->size_limit;
    std::unordered_set<std::string_view> others;  // each volume once
    for (const ContainerFacts* holder : app->holders) {
      if (holder->shm_volume.empty()) plan_.unmounted.push_back(holder);
      if (holder->shm_volume.empty() || holder->shm_volume == name || !others.insert(holder->shm_volume).second) {
        continue;
      }
      add_other(holder->shm_volume);
    }
    return std::move(plan_);
  }

  // The sizes the pod's profile and GPUs call for; nullopt: not checked.
  static std::optional<ShmSizes> sizes(const RuleInput& input) {
    const Phase* app = input.phases.app();
    return input.policy.rule_settings.get<SharedMemoryPolicy>().sizes_for(input.profile.name, app ? app->gpus : 0);
  }

 private:
  // Another container's /dev/shm volume: a too small one is enlarged; each
  // memory-backed one counts against the memory limit too.
  void add_other(const std::string& name) {
    const VolumeFacts* volume = find_volume(name);
    if (!volume) return;
    if (!volume->memory_backed) {
      note_not_memory_backed(name);
      return;
    }
    if (!size_limit_read(*volume)) return;
    if (!volume->size_limit) {
      plan_.size.reset();  // bounded only by the memory limits
      return;
    }
    const Quantity& limit = *volume->size_limit;
    if (limit < sizes_->minimum) plan_.small_others.push_back(volume);
    if (plan_.size) plan_.size = plan_.size->plus(limit < sizes_->minimum ? sizes_->size : limit);
  }

  const VolumeFacts* find_volume(std::string_view name) {
    if (!volumes_) volumes_.emplace(input_.pod.volumes);  // only for pods the rule checks
    return gpusizer::find_volume(input_.pod, *volumes_, name);
  }

  // False, with a problem found, when the volume's sizeLimit does not parse.
  bool size_limit_read(const VolumeFacts& volume) {
    if (volume.size_limit_error.empty()) return true;
    problem(field_path(input_.pod.volume_path(volume)) + ".emptyDir.sizeLimit " + volume.size_limit_error);
    return false;
  }

  void problem(const std::string& what) {
    const std::string message = input_.pod.description + ": " + what;
    result_.findings.push_back({DenialReason::kInvalid, true, message, message});
  }

  void note_not_memory_backed(const std::string& name) {
    plan_.notes.push_back(fit(input_.pod.description + ": /dev/shm (volume \"" + name +
                              "\") is not a memory-backed emptyDir; its size is not checked"));
  }

  const RuleInput& input_;
  const SharedMemoryPolicy& rule_;
  const std::optional<ShmSizes> sizes_;
  RuleResult& result_;
  ShmPlan plan_;
  std::optional<VolumeIndex> volumes_;
};

// The /dev/shm above what the table includes, when the app phase has a table.
std::optional<Quantity> extra_memory(const RuleInput& input, const ShmPlan& plan) {
  if (!plan.applies) return std::nullopt;
  const Quantity included = ShmPlanner::sizes(input)->table_includes;
  if (!plan.applies || !plan.size || *plan.size <= included) return std::nullopt;
  return plan.size->plus(included.times(-1));
}

std::vector<std::string> unmounted_names(const ShmPlan& plan, bool quoted) {
  std::vector<std::string> names;
  for (const ContainerFacts* container : plan.unmounted) {
    names.push_back(quoted ? in_quotes(container->name) : container->name);
  }
  return names;
}

// What is wrong with /dev/shm and what to set, in full and in brief.
Finding finding(const RuleInput& input, const ShmPlan& plan) {
  const ShmSizes rule = *ShmPlanner::sizes(input);
  const PodFacts& pod = input.pod;
  const std::string profile = profile_text(input.profile);
  const std::string needs = "the " + profile + " needs /dev/shm >= " + rule.minimum.to_string() +
                            (rule.serving ? " (NCCL moves tensor-parallel traffic through it)"
                                          : " (torchrun and DataLoader workers abort below it)");
  const std::vector<std::string> names = unmounted_names(plan, true);
  // A pod may have thousands of containers: the names are capped.
  const std::string containers =
      (names.size() == 1 ? "container " : "containers ") + join_capped(names, ", ", 512, "containers");
  const std::string size = rule.size.to_string();
  if (plan.add_volume) {
    return {DenialReason::kShm, true,
            pod.description + ": /dev/shm is not set in " + containers + " (runtime default 64Mi); " + needs +
                "; add to " + field_path(pod.volume_lists.front()) + " {name: " + plan.volume +
                ", emptyDir: {medium: Memory, sizeLimit: " + size + "}} and mount it at /dev/shm in " + containers +
                opt_out_fix(pod, "it"),
            pod.label + "/dev/shm unset in " + containers + ", " + profile + " needs >= " + rule.minimum.to_string()};
  }
  std::vector<std::string> found;  // what is wrong
  std::vector<std::string> fixes;  // what to set
  auto small = [&](const VolumeFacts& volume) {
    const std::string field = field_path(pod.volume_path(volume));
    found.push_back("/dev/shm (volume " + in_quotes(volume.name) + ", " + field + ") sizeLimit " +
                    volume.size_limit->to_string() + " is below the minimum");
    fixes.push_back("set " + field + ".emptyDir.sizeLimit to " + size);
  };
  if (plan.enlarge) small(*plan.existing);
  for (const VolumeFacts* other : plan.small_others) small(*other);
  if (!names.empty()) {
    found.push_back("/dev/shm is not mounted in " + containers);
    fixes.push_back("mount volume " + in_quotes(plan.volume) + " at /dev/shm in " + containers);
  }
  const std::string brief = found.front().starts_with("/dev/shm (volume")
                                ? "/dev/shm sizeLimit below " + rule.minimum.to_string() + " (" + profile + ")"
                                : "/dev/shm not mounted in " + containers + " (" + profile + ")";
  return {
      DenialReason::kShm, true,
      pod.description + ": " + join(found, "; ") + "; " + needs + "; " + join(fixes, " and ") + opt_out_fix(pod, "it"),
      pod.label + brief};
}

// Adds, enlarges or mounts the /dev/shm volumes, one warning for each.
Fix fix(const RuleInput& input, const ShmPlan& plan) {
  const ShmSizes rule = *ShmPlanner::sizes(input);
  const std::string size = rule.size.to_string();
  Fix fix;
  std::vector<std::string> changes;
  auto warn = [&](const std::string& what) {
    fix.warnings.push_back(fit(input.pod.label + "/dev/shm: " + what + " (" + profile_text(input.profile) + ")"));
  };
  const std::vector<std::string> names = unmounted_names(plan, false);
  const std::string listed = join_capped(names, ", ", 512, "containers");
  const std::string where =
      names.size() == 1 ? in_quotes(names.front()) : std::to_string(names.size()) + " GPU containers";
  if (plan.add_volume) {
    fix.edits.emplace_back(AddMemoryVolume{input.pod.volume_lists.front(), plan.volume, rule.size});
    fix.raised.push_back({"shm", rule.size});
    changes.push_back("/dev/shm: added " + size + " (" + listed + ")");
    warn("added " + size + " memory-backed emptyDir " + in_quotes(plan.volume) + " to " + where);
  }
  auto enlarge = [&](const VolumeFacts& volume) {
    const Quantity& limit = *volume.size_limit;
    std::vector<std::string> path = input.pod.volume_path(volume);
    path.insert(path.end(), {"emptyDir", "sizeLimit"});
    fix.edits.emplace_back(SetString{std::move(path), size});
    fix.raised.push_back({"shm", rule.size.plus(limit.times(-1))});
    changes.push_back("/dev/shm " + in_quotes(volume.name) + ": sizeLimit " + limit.to_string() + "->" + size);
    warn("emptyDir " + in_quotes(volume.name) + " sizeLimit " + limit.to_string() + "->" + size + " (" +
         limit.to_string() + " is below the " + rule.minimum.to_string() + " minimum)");
  };
  if (plan.enlarge) enlarge(*plan.existing);
  for (const VolumeFacts* other : plan.small_others) enlarge(*other);
  if (!plan.add_volume && !names.empty()) {
    changes.push_back("/dev/shm: mounted " + in_quotes(plan.volume) + " in " + listed);
    warn("mounted emptyDir " + in_quotes(plan.volume) + " in " + where);
  }
  for (const ContainerFacts* container : plan.unmounted) {
    fix.edits.emplace_back(MountVolume{container, plan.volume, "/dev/shm"});
  }
  fix.changes.push_back(join(changes, "; "));
  return fix;
}

RuleRow explain(const RuleInput& input, const ShmPlan& plan, const std::optional<Quantity>& extra) {
  const auto sizes = ShmPlanner::sizes(input);
  if (!plan.applies) {
    const ShmServingPolicy& serving = input.policy.rule_settings.get<SharedMemoryPolicy>().serving;
    const bool serving_profile =
        std::find(serving.profiles.begin(), serving.profiles.end(), input.profile.name) != serving.profiles.end();
    return {RuleKind::kSharedMemory, "-",
            sizes             ? "not checked: /dev/shm is not a memory-backed emptyDir"
            : serving_profile ? "not checked: the " + profile_text(input.profile) + " needs /dev/shm from " +
                                    gpus_text(serving.from_gpus) + " (sharedMemory.serving.fromGpus)"
                              : "not checked: the " + profile_text(input.profile) + " is not in sharedMemory.profiles"};
  }
  const ShmSizes& rule = *sizes;
  // What happens to a /dev/shm that needs fixing depends on the mode.
  const PodFacts& pod = input.pod;
  const std::string fixed = pod.mode == Mode::kAudit     ? "audit: would deny"
                            : pod.mode == Mode::kEnforce ? "denied (enforce mode)"
                            : pod.opted_out              ? "denied (opted out of mutation)"
                                                         : "gpu-sizer sets " + rule.size.to_string();
  std::string found = plan.add_volume ? "none found: " + fixed
                      : plan.enlarge
                          ? "sizeLimit " + plan.existing->size_limit->to_string() + " below the minimum: " + fixed
                      : plan.size ? "sizeLimit " + plan.size->to_string()
                                  : "no sizeLimit (bounded by the memory limits)";
  if (!plan.unmounted.empty() && !plan.add_volume) found += "; not mounted in every GPU container: " + fixed;
  std::string floor = plan.size ? "/dev/shm " + plan.size->to_string() : "/dev/shm unbounded";
  const auto table = required_resources(input.profile, input.phases.app()->gpus);
  if (table && extra) floor += ", memory " + table->memory.plus(*extra).to_string();
  return {RuleKind::kSharedMemory, floor,
          found + "; minimum " + rule.minimum.to_string() + ", the table includes " + rule.table_includes.to_string()};
}

}  // namespace

RuleResult SharedMemoryRule::evaluate(const RuleInput& input) const {
  RuleResult result;
  const ShmPlan plan = ShmPlanner(input, result).plan();
  const Phase* app = input.phases.app();
  const auto extra = extra_memory(input, plan);
  const auto table = app ? required_resources(input.profile, app->gpus) : std::nullopt;
  if (table && extra) {
    // "train 192Gi + 32Gi /dev/shm": the table and the /dev/shm above what it includes.
    result.floors.push_back(
        {0, kMemory, table->memory.plus(*extra),
         input.profile.name + " " + table->memory.to_string() + " + " + extra->to_string() + " /dev/shm"});
  }
  if (plan.applies && plan.fix_needed()) {
    result.findings.push_back(finding(input, plan));
    result.fix = fix(input, plan);
  }
  for (const std::string& note : plan.notes) result.findings.push_back({DenialReason::kShm, false, "", note});
  if (input.explain && app) result.row = explain(input, plan, extra);
  return result;
}

void SharedMemoryPolicy::read(const YAML::Node& node, bool complete) {
  SharedMemoryPolicy& out = *this;
  const Block block(node, "sharedMemory", complete,
                    {"profiles", "minimum", "size", "tableIncludes", "volumeName", "serving"});
  block.read("serving", [&](const auto& value, const auto&) { read_shm_serving(value, complete, out.serving); });
  block.read("profiles", [&](const auto& value, const auto& path) { out.profiles = read_string_list(value, path); });
  block.read("minimum", [&](const auto& value, const auto& path) { out.minimum = read_quantity(value, path); });
  block.read("size", [&](const auto& value, const auto& path) { out.size = read_quantity(value, path); });
  block.read("tableIncludes", [&](const auto& value, const auto& path) {
    out.table_includes = read_quantity(value, path, Zero::kAllowed);
  });
  block.read("volumeName", [&](const auto& value, const auto& path) { out.volume_name = read_dns_label(value, path); });
  if (out.size < out.minimum) {
    fail(ProblemCode::kInconsistent, "sharedMemory.size", node["size"] ? node["size"] : node,
         "is below sharedMemory.minimum " + out.minimum.to_string());
  }
}

void SharedMemoryPolicy::finish(Policy& policy, const YAML::Node& root) {
  const SharedMemoryPolicy& shm = policy.rule_settings.get<SharedMemoryPolicy>();
  check_profile_names(policy, root, {"sharedMemory", "profiles"}, shm.profiles);
  check_profile_names(policy, root, {"sharedMemory", "serving", "profiles"}, shm.serving.profiles);
}

std::optional<ShmSizes> SharedMemoryPolicy::sizes_for(std::string_view profile, int64_t gpus) const {
  if (contains(profiles, profile)) return ShmSizes{minimum, size, table_includes, false};
  if (contains(serving.profiles, profile) && gpus >= serving.from_gpus) return serving.sizes;
  return std::nullopt;
}

const SettingsBlock* SharedMemoryRule::settings() const {
  static const SettingsBlockOf<SharedMemoryPolicy> block;
  return &block;
}

}  // namespace gpusizer
