// What the metrics port answers (plain HTTP, `serve --metrics-listen`):
// GET /metrics in Prometheus' text format and GET /status, the status page.
// It is served by the asio transport with the webhook port's deadlines, so
// a slow client cannot hold it (transport.h, open_plain_http_transport).
#pragma once

#include <string>

#include "gpusizer/server/claim_watcher.h"
#include "gpusizer/server/metrics.h"
#include "gpusizer/server/node_watcher.h"
#include "gpusizer/server/policy_store.h"
#include "gpusizer/server/pool_watcher.h"
#include "gpusizer/server/status_page.h"
#include "gpusizer/server/transport.h"

namespace gpusizer {

// Everything the two pages show.
struct MetricsSources {
  const PolicyStore& policy;
  Metrics& metrics;
  const StatusCounters& status_counters;
  const RecentDecisions& recent_decisions;
  const NodeWatcher* nodes;         // nullptr: not watched
  const ClaimWatcher* claims;       // nullptr: not watched
  const PoolWatcher* pools;         // nullptr: not watched
  const HistoryRefresher* history;  // nullptr: no --prometheus
  const Transport& webhook;         // its connection counts
  std::string version;
};

class MetricsRoutes final : public HttpHandler {
 public:
  explicit MetricsRoutes(MetricsSources sources) : sources_(std::move(sources)) {}

  // GET (or HEAD) /metrics and /status; 404 naming them for anything else.
  HttpAnswer answer(const HttpRequestView& request) const override;
  HttpAnswer body_too_large() const override;
  HttpAnswer length_required() const override;

 private:
  MetricsSources sources_;
};

}  // namespace gpusizer
