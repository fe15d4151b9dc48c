#include "gpusizer/history/report.h"

#include <algorithm>
#include <ctime>

#include <nlohmann/json.hpp>

#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

std::string optional_text(const std::optional<Quantity>& value) { return value ? value->to_string() : "-"; }

std::string_view advice_name(MemoryAdvice::Kind kind) {
  switch (kind) {
    case MemoryAdvice::Kind::kNone: return "none";
    case MemoryAdvice::Kind::kOomKilled: return "oom_killed";
    case MemoryAdvice::Kind::kNearLimit: return "near_limit";
    case MemoryAdvice::Kind::kOversized: return "oversized";
    case MemoryAdvice::Kind::kFits: return "fits";
  }
  return "none";
}

std::string utc(int64_t seconds) {
  const std::time_t time = seconds;
  std::tm parts{};
  gmtime_r(&time, &parts);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

std::string gpu_memory_text(const ContainerHistory& history) {
  if (!history.gpu_memory_peak_mib) return "-";
  std::string text = std::to_string(*history.gpu_memory_peak_mib) + "MiB";
  if (history.gpu_memory_capacity_mib) text += " of " + std::to_string(*history.gpu_memory_capacity_mib) + "MiB";
  return text;
}

std::string recommendation_text(const ReportRow& row) {
  switch (row.advice.kind) {
    case MemoryAdvice::Kind::kOomKilled:
    case MemoryAdvice::Kind::kNearLimit: return "raise memory to " + row.advice.recommended.to_string();
    case MemoryAdvice::Kind::kOversized: return "could lower memory to " + row.advice.recommended.to_string();
    case MemoryAdvice::Kind::kFits: return "fits";
    case MemoryAdvice::Kind::kNone: return "no runs";
  }
  return "";
}

}  // namespace

bool ReportRow::needs_action() const {
  return advice.kind == MemoryAdvice::Kind::kOomKilled || advice.kind == MemoryAdvice::Kind::kNearLimit;
}

bool HistoryReport::needs_action() const {
  return std::any_of(rows.begin(), rows.end(), [](const ReportRow& row) { return row.needs_action(); });
}

HistoryReport build_report(const Policy& policy, const HistorySnapshot& snapshot) {
  HistoryReport report;
  report.window = snapshot.window;
  report.fetched_at = snapshot.fetched_at;
  const HistoryPolicy& settings = policy.rule_settings.get<HistoryPolicy>();
  for (const auto& [key, history] : snapshot.containers) {
    MemoryAdvice scratch;
    ReportRow row{key, history, snapshot.advice_for(settings, history, scratch), std::nullopt};
    if (const auto parsed = history_key_gpus_and_profile(key.workload); parsed && parsed->first > 0) {
      if (const Profile* profile = policy.find_profile(parsed->second)) {
        if (const auto table = required_resources(*profile, parsed->first)) row.table_memory = table->memory;
      }
    }
    report.rows.push_back(std::move(row));
  }
  return report;
}

std::string report_text(const HistoryReport& report) {
  std::string out = "History of the last " + report.window + " (read " + utc(report.fetched_at) +
                    "): " + std::to_string(report.rows.size()) +
                    (report.rows.size() == 1 ? " container\n" : " containers\n");
  for (const ReportRow& row : report.rows) {
    const ContainerHistory& h = row.history;
    out += "\n" + row.key.namespace_name + " " + row.key.workload + " container " + row.key.container + "\n";
    out += "  runs " + std::to_string(h.run_count()) + ", pods " + std::to_string(h.runs.size()) + ", OOM kills " +
           std::to_string(h.oom_kills) + ", restarts " + std::to_string(h.restarts) + "\n";
    out += "  memory peak " + h.peak_memory.to_string() + ", request " + optional_text(h.memory_request) + ", limit " +
           optional_text(h.memory_limit) + ", table " + optional_text(row.table_memory) + "\n";
    out += "  cpu p95 " + optional_text(h.cpu_p95) + ", request " + optional_text(h.cpu_request) +
           "; GPU memory peak " + gpu_memory_text(h) + "\n";
    out += "  " + recommendation_text(row);
    if (!row.advice.evidence.empty()) out += ": " + row.advice.evidence;
    if (!row.advice.arithmetic.empty()) out += "; " + row.advice.arithmetic;
    out += "\n";
  }
  return out;
}

std::string report_json(const HistoryReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  const auto quantity = [](const std::optional<Quantity>& value) -> nlohmann::json {
    return value ? nlohmann::json(value->to_string()) : nlohmann::json(nullptr);
  };
  for (const ReportRow& row : report.rows) {
    const ContainerHistory& h = row.history;
    nlohmann::json runs = nlohmann::json::array();
    for (const RunUsage& run : h.runs) {
      runs.push_back({{"run", run.run},
                      {"pod", run.pod},
                      {"peakMemory", run.peak_memory.to_string()},
                      {"peakMemoryBytes", run.peak_memory.value_ceil()},
                      {"memoryRequest", quantity(run.memory_request)},
                      {"memoryLimit", quantity(run.memory_limit)},
                      {"oomKilled", run.oom_killed},
                      {"restarts", run.restarts}});
    }
    rows.push_back(
        {{"namespace", row.key.namespace_name},
         {"workload", row.key.workload},
         {"container", row.key.container},
         {"runs", h.run_count()},
         {"oomKills", h.oom_kills},
         {"restarts", h.restarts},
         {"peakMemory", h.peak_memory.to_string()},
         {"memoryRequest", quantity(h.memory_request)},
         {"memoryLimit", quantity(h.memory_limit)},
         {"tableMemory", quantity(row.table_memory)},
         {"cpuP95", quantity(h.cpu_p95)},
         {"cpuRequest", quantity(h.cpu_request)},
         {"gpuMemoryPeakMiB", h.gpu_memory_peak_mib ? nlohmann::json(*h.gpu_memory_peak_mib) : nullptr},
         {"gpuMemoryCapacityMiB", h.gpu_memory_capacity_mib ? nlohmann::json(*h.gpu_memory_capacity_mib) : nullptr},
         {"advice", advice_name(row.advice.kind)},
         {"recommendedMemory",
          row.advice.kind == MemoryAdvice::Kind::kFits || row.advice.kind == MemoryAdvice::Kind::kNone
              ? nlohmann::json(nullptr)
              : nlohmann::json(row.advice.recommended.to_string())},
         {"evidence", row.advice.evidence},
         {"arithmetic", row.advice.arithmetic},
         {"needsAction", row.needs_action()},
         {"perRun", std::move(runs)}});
  }
  return nlohmann::json{{"window", report.window}, {"readAt", utc(report.fetched_at)}, {"containers", std::move(rows)}}
             .dump(2) +
         "\n";
}

namespace {

// One run per bar: its peak, and a tick at its limit; OOM-killed runs red.
std::string runs_plot(const ContainerHistory& history) {
  constexpr int kWidth = 480;
  constexpr int kHeight = 120;
  constexpr int kLabel = 16;  // room for the scale's text at the top
  Quantity top = history.peak_memory;
  for (const RunUsage& run : history.runs) top = std::max(top, run.memory_limit.value_or(Quantity()));
  const double scale =
      top.is_zero() ? 0 : static_cast<double>(kHeight - kLabel) / static_cast<double>(top.value_ceil());
  const int bar = std::clamp(kWidth / std::max<int>(1, static_cast<int>(history.runs.size())) - 2, 2, 24);
  std::string svg = "<svg class=\"runs\" width=\"" + std::to_string(kWidth) + "\" height=\"" + std::to_string(kHeight) +
                    "\" role=\"img\"><title>peak memory against limit per run</title>";
  svg += "<text x=\"0\" y=\"11\">" + html_escape(top.to_string()) + "</text>";
  int x = 0;
  for (const RunUsage& run : history.runs) {
    const int peak = static_cast<int>(static_cast<double>(run.peak_memory.value_ceil()) * scale);
    svg += "<rect class=\"" + std::string(run.oom_killed ? "oom" : "peak") + "\" x=\"" + std::to_string(x) + "\" y=\"" +
           std::to_string(kHeight - peak) + "\" width=\"" + std::to_string(bar) + "\" height=\"" +
           std::to_string(peak) + "\"><title>" +
           html_escape(run.pod + ": peak " + run.peak_memory.to_string() + ", limit " +
                       optional_text(run.memory_limit) + (run.oom_killed ? ", OOM-killed" : "")) +
           "</title></rect>";
    if (run.memory_limit) {
      const int limit = static_cast<int>(static_cast<double>(run.memory_limit->value_ceil()) * scale);
      svg += "<line class=\"limit\" x1=\"" + std::to_string(x) + "\" x2=\"" + std::to_string(x + bar) + "\" y1=\"" +
             std::to_string(kHeight - limit) + "\" y2=\"" + std::to_string(kHeight - limit) + "\"/>";
    }
    x += bar + 2;
  }
  return svg + "</svg>";
}

}  // namespace

std::string report_html(const HistoryReport& report) {
  std::string out =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpu-sizer history report</title>"
      "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
      ".action{background:#fde8e8}rect.peak{fill:#4a7ebb}rect.oom{fill:#c0392b}"
      "line.limit{stroke:#222;stroke-width:2}svg text{font-size:10px}</style></head><body>";
  out += "<h1>gpu-sizer history report</h1><p>The last " + html_escape(report.window) + ", read " +
         html_escape(utc(report.fetched_at)) + ": " + std::to_string(report.rows.size()) +
         " containers. Bars: each run's peak memory (red: OOM-killed); ticks: its limit.</p>";
  out +=
      "<table><thead><tr><th>namespace</th><th>workload</th><th>container</th><th>runs</th><th>OOM kills</th>"
      "<th>memory peak / request / limit</th><th>table</th><th>CPU p95 / request</th><th>GPU memory peak</th>"
      "<th>recommendation</th><th>per run</th></tr></thead><tbody>";
  for (const ReportRow& row : report.rows) {
    const ContainerHistory& h = row.history;
    out += std::string("<tr") + (row.needs_action() ? " class=\"action\"" : "") + ">";
    for (const std::string& cell :
         {row.key.namespace_name, row.key.workload, row.key.container, std::to_string(h.run_count()),
          std::to_string(h.oom_kills),
          h.peak_memory.to_string() + " / " + optional_text(h.memory_request) + " / " + optional_text(h.memory_limit),
          optional_text(row.table_memory), optional_text(h.cpu_p95) + " / " + optional_text(h.cpu_request),
          gpu_memory_text(h),
          recommendation_text(row) + (row.advice.evidence.empty() ? "" : ": " + row.advice.evidence) +
              (row.advice.arithmetic.empty() ? "" : "; " + row.advice.arithmetic)}) {
      out += "<td>" + html_escape(cell) + "</td>";
    }
    out += "<td>" + runs_plot(h) + "</td></tr>";
  }
  return out + "</tbody></table></body></html>\n";
}

}  // namespace gpusizer
