#include "gpusizer/check/osmo/checker.h"

#include <algorithm>
#include <compare>
#include <optional>
#include <set>

#include "gpusizer/check/osmo/fields.h"
#include "gpusizer/check/osmo/scanner.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer::osmo {

namespace {

struct Field {
  OsmoFieldSource source;
  std::string text;  // rendered value; empty when absent or unevaluated
};

// The profile a task's pod would get, and why.
struct Choice {
  const Profile* profile;
  std::string reason;
};

std::string computed_by(const std::string& field, const OsmoFieldSource& source) {
  return field + " is computed by `" + source.expression + "` (line " + std::to_string(source.line) + ")";
}

class BlockChecker {
 public:
  BlockChecker(const BlockInput& input, std::vector<SetPair>& pairs)
      : input_(input), spec_(input.spec), pairs_(pairs), path_("resources." + input.name) {}

  OsmoBlockReport check() {
    report_.block = input_.name;
    read_fields();
    choose_profiles();
    const Field& gpu = fields_["gpu"];
    if (!gpu.source.evaluated) {
      report_.edit_lines.push_back(gpu.source.line);
      report_.findings.push_back(computed_by(path_ + ".gpu", gpu.source) + ", which check cannot evaluate (" +
                                 gpu.source.problem + "): the GPU count is unknown");
      return std::move(report_);
    }
    if (!gpu.text.empty() && gpu.text != "None") {
      auto count = python_int(gpu.text);
      if (!count || *count < 0 || gpu.text.find('_') != std::string::npos) {
        spec_.fail(input_.block["gpu"], path_ + ".gpu: \"" + gpu.text + "\" is not a whole number of GPUs");
      }
      report_.gpus = *count;
    }
    report_.cpu = parse_cpu(fields_["cpu"]);
    report_.memory = parse_bytes(fields_["memory"], "memory");
    report_.storage = parse_bytes(fields_["storage"], "storage");
    if (report_.gpus == 0) return std::move(report_);  // nothing to size

    const int64_t gpus = capped_gpus(gpu);
    size_to_largest_need(gpus);
    if (gpu.source.kind == OsmoFieldSource::Kind::kVariable && (gpus != report_.gpus || report_.need)) {
      pairs_.push_back({gpu.source.variable, std::to_string(gpus), input_.name, true});
      report_.set_values.push_back(gpu.source.variable + "=" + std::to_string(gpus));
    }
    if (!report_.need) return std::move(report_);
    const std::string for_gpus = " for " + gpus_text(gpus) + " (" + report_.profile + " profile)";
    size_field(fields_["cpu"], report_.cpu, report_.need->cpu, "cpu", for_gpus, true);
    size_field(fields_["memory"], report_.memory, report_.need->memory, "memory", for_gpus, true);
    if (report_.need->storage) {
      size_field(fields_["storage"], report_.storage, *report_.need->storage, "storage",
                 " (" + report_.profile + " profile)", false);
    }
    return std::move(report_);
  }

 private:
  // The block's cpu, gpu, memory and storage, and where each comes from.
  void read_fields() {
    const YAML::Node& block = input_.block;
    if (block && block.IsMap()) {
      spec_.check_unique_keys(block, path_);
      static const std::set<std::string> kAllowed = {"cpu",      "memory",        "storage", "gpu",
                                                     "platform", "nodesExcluded", "topology"};
      std::size_t index = 0;
      for (const auto& entry : block) {
        const std::string key = entry.first.Scalar();
        if (!kAllowed.count(key)) {
          spec_.fail(entry.first, path_ + "." + key +
                                      " is not a resource field (OSMO takes cpu, gpu, memory, storage, "
                                      "platform, nodesExcluded, topology)");
        }
        if (key == "cpu" || key == "gpu" || key == "memory" || key == "storage")
          fields_[key] = read_field(entry, key, index);
        ++index;
      }
    } else if (block && !block.IsNull()) {
      spec_.fail(block, path_ + " must be a mapping of resource fields");
    }
    report_.gpu_source = fields_["gpu"].source;
    report_.cpu_source = fields_["cpu"].source;
    report_.memory_source = fields_["memory"].source;
    report_.storage_source = fields_["storage"].source;
  }

  template <typename Entry>
  Field read_field(const Entry& entry, const std::string& key, std::size_t index) const {
    Field field;
    if (entry.second.IsNull()) return field;
    const std::string text = spec_.scalar_text(entry.second, path_ + "." + key);
    const YAML::Node marked = nth_value(input_.marked_block, index);
    if (marked && marked.IsScalar()) {
      field.source = field_source(marked.Scalar(), *spec_.rendered, key == "memory" || key == "storage");
    } else {
      field.source.kind = OsmoFieldSource::Kind::kLiteral;
    }
    field.source.line = spec_.line_of(entry.second);
    if (field.source.evaluated) field.text = std::string(trim(text));
    return field;
  }

  // Profiles of the tasks, as their pods would be labelled.
  void choose_profiles() {
    report_.used = input_.used;
    if (input_.profile) {
      choices_.push_back({input_.profile, input_.profile_reason});
      for (const TaskRef& task : input_.tasks) report_.tasks.push_back({task.task, task.group, input_.profile->name});
      report_.profile = input_.profile->name;
      report_.profile_reason = input_.profile_reason;
      return;
    }
    for (const TaskRef& task : input_.tasks) {
      SelectionInput selection;
      selection.labels = input_.labels;
      selection.labels[kOsmoGroupLabel] = task.group;
      selection.labels["osmo.task_name"] = task.task;
      selection.name = task.task;
      auto choice = select_profile(input_.policy, selection);
      if (!choice.ok()) throw SpecError{at_line(task.line) + "task " + task.task + ": " + choice.error()};
      if (!choice.value().profile) throw SpecError{"the policy names no profile for task " + task.task};
      choices_.push_back({choice.value().profile, choice.value().reason});
      report_.tasks.push_back({task.task, task.group, choice.value().profile->name});
    }
    if (choices_.empty()) throw SpecError{"the policy names no profile for " + path_};
    report_.profile = choices_.front().profile->name;
    report_.profile_reason = choices_.front().reason;
  }

  // The GPU count to size for: the block's, lowered to the cap of a
  // single-pod stage's profile, with a finding for each cap.
  int64_t capped_gpus(const Field& gpu) {
    int64_t gpus = report_.gpus;
    std::set<std::string> seen;
    for (const Choice& choice : choices_) {
      const Profile& profile = *choice.profile;
      if (!seen.insert(profile.name).second || !profile.max_gpus || report_.gpus <= *profile.max_gpus) continue;
      const int64_t cap = *profile.max_gpus;
      std::string finding =
          profile.name + " profile allows at most " + gpus_text(cap) + ", found " + std::to_string(report_.gpus);
      if (gpu.source.kind == OsmoFieldSource::Kind::kLiteral) {
        finding += ": edit " + path_ + ".gpu (line " + std::to_string(gpu.source.line) + ") to " + std::to_string(cap);
      } else if (gpu.source.kind != OsmoFieldSource::Kind::kVariable) {
        finding +=
            ": " + computed_by(path_ + ".gpu", gpu.source) + "; change it to give at most " + std::to_string(cap);
      }
      if (gpu.source.kind != OsmoFieldSource::Kind::kVariable) report_.edit_lines.push_back(gpu.source.line);
      gpus = std::min(gpus, cap);
      report_.findings.push_back(finding);
    }
    return gpus;
  }

  // The largest need of the tasks' table profiles, field by field; the
  // block's profile is the one with the largest memory (then cpu).
  void size_to_largest_need(int64_t gpus) {
    const Profile* sizing = nullptr;
    std::vector<std::string> shared;
    std::set<std::string> listed;
    for (std::size_t t = 0; t < choices_.size(); ++t) {
      const Profile& profile = *choices_[t].profile;
      if (t < input_.tasks.size()) shared.push_back(input_.tasks[t].task + " (" + profile.name + ")");
      if (!listed.insert(profile.name).second) continue;
      auto need = required_resources(profile, gpus);
      if (!need) continue;
      if (!report_.need) {
        report_.need = need;
        sizing = &profile;
        continue;
      }
      if (need->memory > report_.need->memory ||
          (need->memory == report_.need->memory && need->cpu > report_.need->cpu)) {
        sizing = &profile;
      }
      report_.need->cpu = std::max(report_.need->cpu, need->cpu);
      report_.need->memory = std::max(report_.need->memory, need->memory);
      if (need->storage && (!report_.need->storage || *need->storage > *report_.need->storage)) {
        report_.need->storage = need->storage;
      }
    }
    if (sizing) {
      report_.profile = sizing->name;
      for (const Choice& choice : choices_) {
        if (choice.profile == sizing) {
          report_.profile_reason = choice.reason;
          break;
        }
      }
    }
    if (listed.size() > 1) {
      report_.profile_reason =
          "tasks " + join(shared, ", ") + " share " + path_ + "; sized to the largest need (" + report_.profile + ")";
    }
  }

  std::optional<Quantity> parse_cpu(const Field& field) const {
    if (field.text.empty() || field.text == "None") return std::nullopt;
    std::optional<Quantity> cpu;
    if (is_cpu_number(field.text)) {
      if (auto parsed = Quantity::parse(field.text)) cpu = parsed.value();
    }
    if (!cpu) {
      spec_.fail(input_.block["cpu"],
                 path_ + ".cpu: \"" + field.text + "\" is not a number of cores (OSMO takes a plain number)");
    }
    return cpu;
  }

  std::optional<Quantity> parse_bytes(const Field& field, const std::string& key) const {
    if (field.text.empty() || field.text == "None") return std::nullopt;
    const std::string& text = field.text;
    std::string parsed = text;
    bool unit = false;
    for (const char* u : kBinaryUnits) unit = unit || text.ends_with(u);
    if (!unit) {
      if (!is_cpu_number(text)) {
        spec_.fail(input_.block[key],
                   path_ + "." + key + ": \"" + text +
                       "\" is not an amount OSMO takes: use binary units (Ki, Mi, Gi, Ti), not GB or G");
      }
      parsed = text + "Ki";  // OSMO reads a bare number as Ki
    }
    auto q = Quantity::parse(parsed);
    if (!q.ok() || q.value().is_negative()) {
      spec_.fail(input_.block[key], path_ + "." + key + ": \"" + text + "\" is not an amount OSMO takes");
    }
    return q.value();
  }

  // The text to set `source.variable` to so the field gives at least `need`.
  static std::string set_text(const OsmoFieldSource& source, const Quantity& need, bool cpu) {
    if (!source.unit.empty())
      return std::to_string(clamp_to_int64(ceil_div(need.value_ceil(), unit_bytes(source.unit))));
    if (cpu) return std::to_string(clamp_to_int64(ceil_div(need.milli_ceil(), 1000)));
    return need.to_string();
  }

  void size_field(const Field& field, const std::optional<Quantity>& found, const Quantity& need,
                  const std::string& key, const std::string& for_gpus, bool always_set) {
    const OsmoFieldSource& source = field.source;
    const std::string needed = key == "cpu" ? set_text(OsmoFieldSource{}, need, true) : need.to_string();
    const bool variable = source.kind == OsmoFieldSource::Kind::kVariable;
    if (!source.evaluated) {
      report_.edit_lines.push_back(source.line);
      report_.findings.push_back(computed_by(path_ + "." + key, source) + ", which check cannot evaluate (" +
                                 source.problem + "): make sure it gives at least " + needed + for_gpus);
      return;
    }
    const bool short_of = !found || *found < need;
    if (!found) {
      report_.findings.push_back(key + " is not set; " + needed + " needed" + for_gpus + ": add " + key + " to " +
                                 path_);
      return;
    }
    if (short_of) {
      std::string finding = key + " " + found->to_string() + " is below " + needed + for_gpus;
      if (source.kind == OsmoFieldSource::Kind::kLiteral) {
        finding += ": " + path_ + "." + key + " is written in the file (line " + std::to_string(source.line) +
                   "), edit it to " + needed;
      } else if (!variable) {
        finding += ": " + computed_by(path_ + "." + key, source) + ", change it to give at least " + needed;
      }
      if (!variable) report_.edit_lines.push_back(source.line);
      report_.findings.push_back(finding);
    }
    if (variable && (always_set || short_of)) {
      std::string value;
      if (short_of) {
        value = set_text(source, need, key == "cpu");
      } else {
        auto it = input_.variables.find(source.variable);
        value = it != input_.variables.end() ? it->second.text : field.text;
      }
      pairs_.push_back({source.variable, value, report_.block, false});
      report_.set_values.push_back(shell_pair(source.variable, value));
    }
  }

  const BlockInput& input_;
  const SpecLines& spec_;
  std::vector<SetPair>& pairs_;
  const std::string path_;
  OsmoBlockReport report_;
  std::map<std::string, Field> fields_;
  std::vector<Choice> choices_;
};

// Compares two --set values as quantities; nullopt when either is not one.
std::optional<std::strong_ordering> compare_values(const std::string& a, const std::string& b) {
  auto qa = Quantity::parse(a), qb = Quantity::parse(b);
  if (!qa.ok() || !qb.ok()) return std::nullopt;
  return qa.value() <=> qb.value();
}

}  // namespace

Result<OsmoBlockReport> check_block(const BlockInput& input, std::vector<SetPair>& pairs) {
  try {
    return BlockChecker(input, pairs).check();
  } catch (const SpecError& error) {
    return Status::invalid_argument(error.message);
  }
}

std::string set_line(const std::vector<SetPair>& pairs, const std::map<std::string, std::string>& set_values,
                     std::vector<OsmoBlockReport>& blocks) {
  std::vector<SetPair> merged;
  for (const SetPair& pair : pairs) {
    auto it = std::find_if(merged.begin(), merged.end(), [&](const SetPair& m) { return m.variable == pair.variable; });
    if (it == merged.end()) {
      merged.push_back(pair);
      continue;
    }
    if (it->value == pair.value) continue;
    if (it->gpu || pair.gpu) {
      for (OsmoBlockReport& block : blocks) {
        if (block.block != pair.block) continue;
        block.findings.push_back("variable " + pair.variable + " is shared with resources." + it->block +
                                 ", which needs " + it->variable + "=" + it->value + " while this block needs " +
                                 pair.value + ": give the blocks separate variables");
      }
      continue;
    }
    if (auto order = compare_values(pair.value, it->value); order && *order > 0) it->value = pair.value;
  }
  std::vector<std::string> line;
  for (const SetPair& pair : merged) line.push_back(shell_pair(pair.variable, pair.value));
  for (const auto& user : set_values) {
    const bool covered =
        std::any_of(merged.begin(), merged.end(), [&](const SetPair& m) { return m.variable == user.first; });
    if (!covered) line.push_back(shell_pair(user.first, user.second));
  }
  return join(line, " ");
}

}  // namespace gpusizer::osmo
