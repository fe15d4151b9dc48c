// `gpu-sizer report` (docs/history.md "Report"): per workload key and
// container, what history read (runs, OOM kills, peak memory against
// request and limit, CPU p95 against request, GPU memory peak against
// capacity), what the table gives, and what history recommends with its
// arithmetic; as text, JSON or an HTML page with a plot per workload.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpusizer/sizing/history.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

struct ReportRow {
  HistoryKey key;
  ContainerHistory history;
  MemoryAdvice advice;
  std::optional<Quantity> table_memory;  // what the profile's table gives the pod; nullopt: unknown profile
  // OOM kills, or a peak close to the limit: the exit code says so.
  bool needs_action() const;
};

struct HistoryReport {
  std::vector<ReportRow> rows;  // by namespace, workload, container
  std::string window;
  int64_t fetched_at = 0;
  bool needs_action() const;
};

HistoryReport build_report(const Policy& policy, const HistorySnapshot& snapshot);

std::string report_text(const HistoryReport& report);
std::string report_json(const HistoryReport& report);
// One self-contained page (no script, no external file): a table, and per
// row an SVG of each run's peak against its limit.
std::string report_html(const HistoryReport& report);

}  // namespace gpusizer
