// The report of an OSMO workflow check, as text and as JSON
// (osmo_report_text and osmo_report_json in osmo_workflow.h).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "gpusizer/check/osmo_workflow.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

std::string source_text(const OsmoFieldSource& source) {
  switch (source.kind) {
    case OsmoFieldSource::Kind::kAbsent: return "not set";
    case OsmoFieldSource::Kind::kLiteral: return "literal";
    case OsmoFieldSource::Kind::kVariable: return "{{" + source.variable + "}}" + source.unit;
    case OsmoFieldSource::Kind::kExpression: return source.expression;
  }
  return "";
}

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

nlohmann::json source_json(const OsmoFieldSource& source) {
  static const char* const kKinds[] = {"absent", "literal", "variable", "expression"};
  nlohmann::json out = {{"kind", kKinds[static_cast<int>(source.kind)]}};
  if (source.line) out["line"] = source.line;
  if (source.kind == OsmoFieldSource::Kind::kVariable) {
    out["variable"] = source.variable;
    if (!source.unit.empty()) out["unit"] = source.unit;
  }
  if (source.kind == OsmoFieldSource::Kind::kExpression) {
    out["expression"] = source.expression;
    out["evaluated"] = source.evaluated;
    if (!source.evaluated) out["problem"] = source.problem;
  }
  return out;
}

nlohmann::json quantity_json(const std::optional<Quantity>& q) {
  return q ? nlohmann::json(q->to_string()) : nlohmann::json(nullptr);
}

}  // namespace

std::string osmo_report_text(const std::string& file, const OsmoReport& report) {
  const auto used = std::count_if(report.blocks.begin(), report.blocks.end(), [](const auto& b) { return b.used; });
  std::string out = file + ": OSMO workflow, " + std::to_string(used) +
                    (used == 1 ? " resource block" : " resource blocks") + " used by tasks";
  if (const auto others = static_cast<long>(report.blocks.size()) - used; others > 0) {
    out += ", " + std::to_string(others) + " used by none but read by --set values";
  }
  out += "\n";
  for (const std::string& warning : report.warnings) out += "warning: " + warning + "\n";
  for (const OsmoBlockReport& block : report.blocks) {
    out += "\nresources." + block.block + ": " + (block.fits() ? "OK" : "UNDERSIZED") + "\n";
    std::vector<std::string> tasks;
    for (const OsmoTask& task : block.tasks) tasks.push_back(task.task + " (group " + task.group + ")");
    if (block.used) {
      out += "  tasks:    " + join(tasks, ", ") + "\n";
    } else {
      out +=
          "  tasks:    none at these values" + (tasks.empty() ? "" : " (left out: " + join(tasks, ", ") + ")") + "\n";
    }
    out += "  profile:  " + block.profile + " (" + block.profile_reason + ")\n";
    const bool gpus_known = block.gpu_source.evaluated;
    out += "  GPUs:     " + (gpus_known ? std::to_string(block.gpus) : std::string("?")) + "  from " +
           source_text(block.gpu_source) + "\n";
    if (!gpus_known) {
      // The finding below says why; nothing can be sized without the count.
    } else if (block.gpus > 0) {
      out += "  " + pad("", 10) + pad("found", 10) + pad("needed", 10) + "from\n";
      auto row = [&](const std::string& key, const std::optional<Quantity>& found,
                     const std::optional<Quantity>& needed, const OsmoFieldSource& source) {
        const std::string found_text = found ? found->to_string() : source.evaluated ? "-" : "?";
        out += "  " + pad(key, 10) + pad(found_text, 10) + pad(needed ? needed->to_string() : "-", 10) +
               source_text(source) + "\n";
      };
      row("cpu", block.cpu, block.need ? std::optional<Quantity>(block.need->cpu) : std::nullopt, block.cpu_source);
      row("memory", block.memory, block.need ? std::optional<Quantity>(block.need->memory) : std::nullopt,
          block.memory_source);
      row("storage", block.storage, block.need ? block.need->storage : std::nullopt, block.storage_source);
    } else {
      out += "  no GPUs: nothing to size\n";
    }
    for (const std::string& finding : block.findings) out += "  - " + finding + "\n";
  }
  out += "\n";
  if (report.fits()) {
    out += "all resource blocks fit\n";
  } else if (report.set_line.empty() || !report.set_fixes) {
    std::set<int> lines;
    for (const OsmoBlockReport& block : report.blocks) lines.insert(block.edit_lines.begin(), block.edit_lines.end());
    lines.erase(0);
    std::vector<std::string> named;
    for (int line : lines) named.push_back(std::to_string(line));
    out += "no --set value fixes this: edit the resource blocks as the findings say";
    if (!named.empty()) out += std::string(named.size() == 1 ? " (line " : " (lines ") + join(named, ", ") + ")";
    out += "\n";
  } else {
    out += "--set " + report.set_line + "\n";
  }
  return out;
}

nlohmann::json osmo_report_json(const std::string& file, const OsmoReport& report) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const OsmoBlockReport& block : report.blocks) {
    nlohmann::json tasks = nlohmann::json::array();
    for (const OsmoTask& task : block.tasks) {
      tasks.push_back({{"task", task.task}, {"group", task.group}, {"profile", task.profile}});
    }
    auto field = [&](const std::optional<Quantity>& found, const std::optional<Quantity>& needed,
                     const OsmoFieldSource& source) {
      return nlohmann::json{
          {"found", quantity_json(found)}, {"needed", quantity_json(needed)}, {"source", source_json(source)}};
    };
    const auto need_cpu = block.need ? std::optional<Quantity>(block.need->cpu) : std::nullopt;
    const auto need_memory = block.need ? std::optional<Quantity>(block.need->memory) : std::nullopt;
    const auto need_storage = block.need ? block.need->storage : std::nullopt;
    blocks.push_back({{"block", block.block},
                      {"used", block.used},
                      {"tasks", tasks},
                      {"profile", block.profile},
                      {"profileReason", block.profile_reason},
                      {"gpus", block.gpu_source.evaluated ? nlohmann::json(block.gpus) : nlohmann::json(nullptr)},
                      {"gpu", {{"source", source_json(block.gpu_source)}}},
                      {"cpu", field(block.cpu, need_cpu, block.cpu_source)},
                      {"memory", field(block.memory, need_memory, block.memory_source)},
                      {"storage", field(block.storage, need_storage, block.storage_source)},
                      {"findings", block.findings},
                      {"set", block.set_values},
                      {"fits", block.fits()}});
  }
  return {{"file", file},           {"format", "osmo-workflow"},    {"fits", report.fits()},
          {"set", report.set_line}, {"setFixes", report.set_fixes}, {"warnings", report.warnings},
          {"blocks", blocks}};
}

}  // namespace gpusizer
