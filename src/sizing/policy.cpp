#include "gpusizer/sizing/policy.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <tuple>

#include <yaml-cpp/yaml.h>

#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/policy_fields.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/digest.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"
#include "gpusizer/util/yaml_keys.h"
#include "gpusizer/util/yaml_load.h"

namespace gpusizer {

std::string_view to_string(Mode mode) {
  switch (mode) {
    case Mode::kMutate: return "mutate";
    case Mode::kEnforce: return "enforce";
    case Mode::kAudit: return "audit";
  }
  return "mutate";
}

Mode Policy::mode_for(std::string_view ns) const {
  auto it = namespace_modes.find(ns);
  return it == namespace_modes.end() ? mode : it->second;
}

std::optional<Exemption> Policy::exemption_for(std::string_view ns, std::string_view user,
                                               const std::vector<std::string>& groups) const {
  if (contains(exemptions.namespaces, ns)) return Exemption{"namespace", std::string(ns)};
  if (!user.empty() && contains(exemptions.users, user)) return Exemption{"user", std::string(user)};
  for (const auto& group : groups) {
    if (contains(exemptions.groups, group)) return Exemption{"group", group};
  }
  return std::nullopt;
}

bool Policy::is_gpu_resource(std::string_view resource) const {
  const AcceleratorClass* of = accelerator_for(resource);
  return of && of->sizing == AcceleratorSizing::kGpus;
}

const AcceleratorClass* Policy::accelerator_for(std::string_view resource) const {
  static const AcceleratorClass kGpu{"", "", "", AcceleratorForm::kDevice, AcceleratorSizing::kGpus, "", "GPU"};
  if (contains(gpu_resources, resource)) return &kGpu;
  for (const AcceleratorClass& each : accelerators) {
    if (each.matches(resource)) return &each;
  }
  return unknown_accelerator_class(resource);
}

const AcceleratorClass* Policy::device_class_for(std::string_view device_class) const {
  for (const AcceleratorClass& each : accelerator_device_classes) {
    if (each.matches(device_class)) return &each;
  }
  return unknown_device_class(device_class);
}

const Profile* Policy::find_profile(std::string_view name) const {
  auto it = profiles.find(name);
  return it == profiles.end() ? nullptr : &it->second;
}

std::string Policy::profile_names() const {
  std::vector<std::string> names;
  for (const auto& [name, profile] : profiles) names.push_back(name);
  return join(names, ", ");
}

namespace {

// The field readers and FieldError (policy_fields.h) are this parser's own.
using namespace policy_fields;  // NOLINT(google-build-using-namespace)

void read_long_lived(const YAML::Node& node, bool complete, LongLivedPolicy& out) {
  const Block block(node, "longLived", complete, {"kinds", "patchTemplates"});
  block.read("kinds", [&](const auto& value, const auto& path) { out.kinds = read_string_list(value, path); });
  block.read("patchTemplates",
             [&](const auto& value, const auto& path) { out.patch_templates = read_bool(value, path); });
}

// `accelerators:`, a list put before the base's.
std::vector<AcceleratorClass> read_accelerators(const YAML::Node& node) {
  if (!node.IsSequence())
    fail(ProblemCode::kWrongType, "accelerators", node,
         "must be a list of {resource, annotation or deviceClass, form, sizing, ...}");
  std::vector<AcceleratorClass> classes;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node& entry = node[i];
    const std::string path = "accelerators[" + std::to_string(i) + "]";
    require_map(entry, path);
    check_keys(entry, path, {"resource", "annotation", "deviceClass", "form", "sizing", "vendor", "unit", "whole"});
    AcceleratorClass read;
    if (entry["resource"]) read.resource = read_string(entry["resource"], path + ".resource");
    if (entry["annotation"]) read.annotation = read_string(entry["annotation"], path + ".annotation");
    if (entry["deviceClass"]) read.device_class = read_string(entry["deviceClass"], path + ".deviceClass");
    if (read.resource.empty() + read.annotation.empty() + read.device_class.empty() != 2)
      fail(ProblemCode::kBadValue, path, entry,
           "must name one of resource (nvidia.com/mig-*), annotation or deviceClass (gpu.nvidia.com)");
    const auto one_of = [&](const char* key, auto values, auto& out) {
      if (!entry[key]) fail(ProblemCode::kMissingField, path, entry, std::string("missing field ") + key);
      const std::string text = read_string(entry[key], path + "." + key);
      std::vector<std::string> names;
      for (const auto value : values) {
        if (text == to_string(value)) {
          out = value;
          return;
        }
        names.emplace_back(to_string(value));
      }
      fail(ProblemCode::kBadValue, path + "." + key, entry[key], "must be one of " + join(names, ", "));
    };
    one_of("form",
           std::array{AcceleratorForm::kDevice, AcceleratorForm::kMigSlice, AcceleratorForm::kShared,
                      AcceleratorForm::kFraction},
           read.form);
    one_of("sizing", std::array{AcceleratorSizing::kGpus, AcceleratorSizing::kWarn, AcceleratorSizing::kDetail},
           read.sizing);
    if (!read.annotation.empty() && read.sizing == AcceleratorSizing::kGpus)
      fail(ProblemCode::kBadValue, path + ".sizing", entry["sizing"],
           "an annotation cannot be sized as GPUs: no container holds it (use warn)");
    if (entry["vendor"]) read.vendor = read_string(entry["vendor"], path + ".vendor");
    read.unit = entry["unit"] ? read_string(entry["unit"], path + ".unit") : std::string(to_string(read.form));
    if (entry["whole"]) {
      if (read.sizing != AcceleratorSizing::kDetail)
        fail(ProblemCode::kBadValue, path + ".whole", entry["whole"], "belongs to a detail (sizing: detail) only");
      read.whole = read_int(entry["whole"], path + ".whole", 1);
    }
    classes.push_back(std::move(read));
  }
  return classes;
}

Mode read_mode(const YAML::Node& node, const std::string& path) {
  const std::string text = read_string(node, path);
  if (text == "mutate") return Mode::kMutate;
  if (text == "enforce") return Mode::kEnforce;
  if (text == "audit") return Mode::kAudit;
  fail(ProblemCode::kBadValue, path, node, "must be mutate, enforce or audit, found \"" + text + "\"");
}

TableRow read_row(const YAML::Node& node, const std::string& path) {
  require_map(node, path);
  check_keys(node, path, {"gpus", "cpu", "memory"});
  for (const char* key : {"gpus", "cpu", "memory"}) {
    if (!node[key]) fail(ProblemCode::kMissingField, path, node, std::string("missing field ") + key);
  }
  return TableRow{read_int(node["gpus"], path + ".gpus", 1), read_quantity(node["cpu"], path + ".cpu"),
                  read_quantity(node["memory"], path + ".memory")};
}

// Rows must grow with GPUs, and interpolating past a row with perExtraGpu
// must not overshoot the next row: more GPUs never need less.
void check_table(const Profile& profile, const YAML::Node& table, const std::string& path) {
  for (std::size_t i = 1; i < profile.table.size(); ++i) {
    const TableRow& below = profile.table[i - 1];
    const TableRow& row = profile.table[i];
    const std::string row_path = path + ".table[" + std::to_string(i) + "]";
    if (row.gpus <= below.gpus)
      fail(ProblemCode::kInconsistent, row_path + ".gpus", table[i], "rows must be in ascending GPU order");
    const Requirement extended = extend_row(profile, below, row.gpus - 1);
    if (extended.cpu > row.cpu) {
      fail(ProblemCode::kInconsistent, row_path + ".cpu", table[i],
           "is below row " + std::to_string(i - 1) + " plus perExtraGpu.cpu for " + std::to_string(row.gpus - 1) +
               " GPUs");
    }
    if (extended.memory > row.memory) {
      fail(ProblemCode::kInconsistent, row_path + ".memory", table[i],
           "is below row " + std::to_string(i - 1) + " plus perExtraGpu.memory for " + std::to_string(row.gpus - 1) +
               " GPUs");
    }
  }
}

Profile read_profile(const std::string& name, const YAML::Node& node, const std::string& path) {
  require_map(node, path);
  check_keys(node, path, {"setPrefix", "storage", "table", "perExtraGpu", "maxGpus"});
  Profile profile;
  profile.name = name;
  profile.set_prefix = node["setPrefix"] ? read_string(node["setPrefix"], path + ".setPrefix") : name;
  if (node["storage"]) profile.storage = read_quantity(node["storage"], path + ".storage");
  if (node["maxGpus"]) profile.max_gpus = read_int(node["maxGpus"], path + ".maxGpus", 1);
  if (const YAML::Node table = node["table"]) {
    if (!table.IsSequence() || table.size() == 0)
      fail(ProblemCode::kWrongType, path + ".table", table, "must be a non-empty list of rows");
    for (std::size_t i = 0; i < table.size(); ++i) {
      profile.table.push_back(read_row(table[i], path + ".table[" + std::to_string(i) + "]"));
    }
    const YAML::Node extra = node["perExtraGpu"];
    if (!extra) fail(ProblemCode::kInconsistent, path, node, "a profile with a table needs perExtraGpu {cpu, memory}");
    require_map(extra, path + ".perExtraGpu");
    check_keys(extra, path + ".perExtraGpu", {"cpu", "memory"});
    if (!extra["cpu"] || !extra["memory"])
      fail(ProblemCode::kInconsistent, path + ".perExtraGpu", extra, "needs both cpu and memory");
    profile.extra_gpu_cpu = read_quantity(extra["cpu"], path + ".perExtraGpu.cpu");
    profile.extra_gpu_memory = read_quantity(extra["memory"], path + ".perExtraGpu.memory");
    check_table(profile, table, path);
  } else if (node["perExtraGpu"]) {
    fail(ProblemCode::kInconsistent, path + ".perExtraGpu", node["perExtraGpu"], "needs a table to extend");
  } else if (node["storage"]) {
    // Sizing comes from the table: a profile without one sizes nothing, and
    // a storage value there would be silently ignored.
    fail(ProblemCode::kInconsistent, path + ".storage", node["storage"],
         "needs a table: a profile without a table sizes nothing");
  }
  return profile;
}

ProfileRule read_rule(const YAML::Node& node, const std::string& path) {
  require_map(node, path);
  check_keys(node, path, {"on", "equals", "contains", "glob", "in", "profile"});
  constexpr const char* kSubjects =
      "label:KEY, annotation:KEY, name, template, replicaType, kind, ownerKind or command";
  if (!node["on"]) fail(ProblemCode::kMissingField, path, node, std::string("missing field on (") + kSubjects + ")");
  if (!node["profile"]) fail(ProblemCode::kMissingField, path, node, "missing field profile");
  ProfileRule rule;
  const std::string on = read_string(node["on"], path + ".on");
  std::string subject_text = on;
  static constexpr std::pair<std::string_view, ProfileRule::Subject> kPlain[] = {
      {"name", ProfileRule::Subject::kName},
      {"template", ProfileRule::Subject::kTemplate},
      {"replicaType", ProfileRule::Subject::kReplicaType},
      {"kind", ProfileRule::Subject::kKind},
      {"ownerKind", ProfileRule::Subject::kOwnerKind},
      {"command", ProfileRule::Subject::kCommand}};
  const auto* plain =
      std::find_if(std::begin(kPlain), std::end(kPlain), [&](const auto& entry) { return entry.first == on; });
  if (plain != std::end(kPlain)) {
    rule.subject = plain->second;
  } else if (on.starts_with("label:") && on.size() > 6) {
    rule.subject = ProfileRule::Subject::kLabel;
    rule.key = on.substr(6);
    subject_text = "label " + rule.key;
  } else if (on.starts_with("annotation:") && on.size() > 11) {
    rule.subject = ProfileRule::Subject::kAnnotation;
    rule.key = on.substr(11);
    subject_text = "annotation " + rule.key;
  } else {
    fail(ProblemCode::kBadValue, path + ".on", node["on"],
         std::string("must be ") + kSubjects + ", found \"" + on + "\"");
  }
  int matchers = 0;
  for (const auto& [key, match] :
       {std::pair{"equals", ProfileRule::Match::kEquals}, std::pair{"contains", ProfileRule::Match::kContains},
        std::pair{"glob", ProfileRule::Match::kGlob}, std::pair{"in", ProfileRule::Match::kIn}}) {
    if (!node[key]) continue;
    ++matchers;
    rule.match = match;
    if (match == ProfileRule::Match::kIn) {
      rule.values = read_string_list(node[key], path + "." + key);
      if (rule.values.empty())
        fail(ProblemCode::kMissingField, path + ".in", node[key], "must list at least one value");
      std::string listed = rule.values.front();
      if (rule.values.size() > 1) listed = join(rule.values, ", ");
      // A long list reads as its first names: the rule's place is in the policy.
      rule.text = subject_text + " in [" + (listed.size() > 60 ? truncate_utf8(listed, 57) + "..." : listed) + "]";
    } else {
      rule.value = read_string(node[key], path + "." + key);
      rule.text = subject_text + " " + key + " \"" + rule.value + "\"";
    }
  }
  if (matchers != 1) fail(ProblemCode::kInconsistent, path, node, "needs exactly one of equals, contains, glob, in");
  rule.profile = read_string(node["profile"], path + ".profile");
  return rule;
}

// Fields absent from `root` keep their value from `base` (the embedded
// default), so `mode: enforce` alone is a complete policy file. Without a
// base (parsing the default itself) every field is required.
Policy read_policy(const YAML::Node& root, const Policy* base) {
  if (!root.IsMap()) fail(ProblemCode::kWrongType, "policy", root, "must be a YAML mapping of policy fields");
  // The policy's own fields, then each rule's block (rule_settings.h).
  std::vector<std::string_view> keys = {"mode",         "namespaceModes", "exemptions",   "gpuResources",
                                        "accelerators", "denyFromGpus",   "profileRules", "defaultProfile",
                                        "profiles",     "longLived",      "workloads"};
  for (const SettingsBlock* block : settings_blocks()) keys.push_back(block->key());
  check_keys(root, "", keys);
  if (!base) {
    for (const std::string_view key : keys) {
      if (key != "namespaceModes" && key != "workloads" && !root[std::string(key)])
        fail(ProblemCode::kMissingField, std::string(key), root, "missing");
    }
  }
  Policy policy = base ? *base : Policy{};
  if (root["mode"]) policy.mode = read_mode(root["mode"], "mode");
  if (const YAML::Node modes = root["namespaceModes"]) {
    if (!modes.IsMap()) fail(ProblemCode::kWrongType, "namespaceModes", modes, "must map namespace to mode");
    check_unique_keys(modes, "namespaceModes");
    policy.namespace_modes.clear();
    for (const auto& entry : modes) {
      const auto ns = entry.first.as<std::string>();
      policy.namespace_modes[ns] = read_mode(entry.second, "namespaceModes." + ns);
    }
  }
  if (const YAML::Node exemptions = root["exemptions"]) {
    require_map(exemptions, "exemptions");
    check_keys(exemptions, "exemptions", {"namespaces", "users", "groups"});
    // Each list given replaces the default's; absent ones are kept.
    for (const auto& [key, list] :
         {std::pair{"namespaces", &policy.exemptions.namespaces}, std::pair{"users", &policy.exemptions.users},
          std::pair{"groups", &policy.exemptions.groups}}) {
      if (exemptions[key]) *list = read_string_list(exemptions[key], std::string("exemptions.") + key);
    }
  }
  if (root["gpuResources"]) {
    policy.gpu_resources = read_string_list(root["gpuResources"], "gpuResources");
    if (policy.gpu_resources.empty())
      fail(ProblemCode::kMissingField, "gpuResources", root["gpuResources"], "must name at least one resource");
  }
  if (const YAML::Node list = root["accelerators"]) {
    // Before the base's, so that an entry given wins over a default one.
    std::vector<AcceleratorClass> by_resource;
    std::vector<AcceleratorClass> by_annotation;
    std::vector<AcceleratorClass> by_device_class;
    for (AcceleratorClass& each : read_accelerators(list)) {
      (!each.annotation.empty()     ? by_annotation
       : !each.device_class.empty() ? by_device_class
                                    : by_resource)
          .push_back(std::move(each));
    }
    policy.accelerators.insert(policy.accelerators.begin(), by_resource.begin(), by_resource.end());
    policy.accelerator_annotations.insert(policy.accelerator_annotations.begin(), by_annotation.begin(),
                                          by_annotation.end());
    policy.accelerator_device_classes.insert(policy.accelerator_device_classes.begin(), by_device_class.begin(),
                                             by_device_class.end());
  }
  if (root["denyFromGpus"]) policy.deny_from_gpus = read_int(root["denyFromGpus"], "denyFromGpus", 1);
  if (const YAML::Node profiles = root["profiles"]) {
    require_map(profiles, "profiles");
    check_unique_keys(profiles, "profiles");
    policy.profiles.clear();
    for (const auto& entry : profiles) {
      const auto name = entry.first.as<std::string>();
      policy.profiles[name] = read_profile(name, entry.second, "profiles." + name);
    }
    if (policy.profiles.empty())
      fail(ProblemCode::kMissingField, "profiles", profiles, "must define at least one profile");
  }
  if (const YAML::Node rules = root["profileRules"]) {
    if (!rules.IsSequence()) fail(ProblemCode::kWrongType, "profileRules", rules, "must be a list of rules");
    policy.profile_rules.clear();
    for (std::size_t i = 0; i < rules.size(); ++i) {
      policy.profile_rules.push_back(read_rule(rules[i], "profileRules[" + std::to_string(i) + "]"));
    }
  }
  if (root["defaultProfile"]) policy.default_profile = read_string(root["defaultProfile"], "defaultProfile");
  const bool complete = base == nullptr;
  const auto blocks = settings_blocks();
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (const YAML::Node node = root[std::string(blocks[i]->key())]) {
      blocks[i]->read(node, complete, policy.rule_settings.at(i));
    }
  }
  if (root["longLived"]) read_long_lived(root["longLived"], complete, policy.long_lived);
  if (root["workloads"]) policy.workloads = read_workloads(root["workloads"]);

  // Cross references are checked after merging, so a file may name a profile
  // that only the default defines.
  const std::string known = " (profiles: " + policy.profile_names() + ")";
  if (!policy.find_profile(policy.default_profile)) {
    fail(ProblemCode::kUnknownName, "defaultProfile", root["defaultProfile"] ? root["defaultProfile"] : root,
         "names unknown profile \"" + policy.default_profile + "\"" + known);
  }
  for (std::size_t i = 0; i < policy.profile_rules.size(); ++i) {
    const std::string& profile = policy.profile_rules[i].profile;
    if (!policy.find_profile(profile)) {
      const YAML::Node rules = root["profileRules"];
      fail(ProblemCode::kUnknownName, "profileRules[" + std::to_string(i) + "].profile", rules ? rules[i] : root,
           "names unknown profile \"" + profile + "\"" + known);
    }
  }
  for (const SettingsBlock* block : blocks) block->finish(policy, root);
  return policy;
}

// A policy is a few hundred nodes. Its readers walk lists an alias may
// repeat (a 3000-row table aliased by 3000 profiles took 52 s and 732 MiB),
// so what its aliases expand to is bounded, far above any real policy.
constexpr YamlBounds kPolicyBounds{1'000'000, 400, ""};

Result<Policy> parse_policy_over(std::string_view yaml_text, std::string_view source, const Policy* base) {
  const std::string prefix = "policy " + std::string(source) + ": ";
  try {
    YamlBudget budget{kPolicyBounds};
    const YAML::Node root = load_yaml(yaml_text, budget);
    if (!root || root.IsNull()) return Problem{ProblemCode::kMissingField, "", prefix + "is empty"};
    Policy policy = read_policy(root, base);
    policy.source = std::string(source);
    policy.sha256 = sha256_hex(yaml_text);
    return policy;
  } catch (const FieldError& error) {
    return Problem{error.code, error.path, prefix + error.message};
  } catch (const YAML::Exception& error) {
    // yaml-cpp's what() already carries "yaml-cpp: error at line L, column C".
    return Problem{ProblemCode::kSyntax, "", prefix + error.what()};
  }
}

}  // namespace

Result<Policy> parse_policy(std::string_view yaml_text, std::string_view source) {
  return parse_policy_over(yaml_text, source, &default_policy());
}

const Policy& default_policy() {
  // The embedded text is checked by the unit tests; a build whose default
  // does not parse must not start, so failing loudly here is right.
  static const Policy policy = [] {
    auto parsed = parse_policy_over(default_policy_yaml(), "embedded default", nullptr);
    if (!parsed) throw std::logic_error(parsed.error());
    return std::move(parsed).value();
  }();
  return policy;
}

}  // namespace gpusizer
