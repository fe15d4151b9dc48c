#include "gpusizer/server/metrics_routes.h"

#include <optional>

namespace gpusizer {

HttpAnswer MetricsRoutes::answer(const HttpRequestView& request) const {
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (get && request.path == "/metrics") {
    if (sources_.nodes) sources_.metrics.set_node_sync_age(sources_.nodes->seconds_since_sync());
    sources_.metrics.set_connections(sources_.webhook.connections());
    return {200, "text/plain; version=0.0.4", sources_.metrics.render()};
  }
  if (get && request.path == "/status") {
    const auto node_status = sources_.nodes ? std::optional(sources_.nodes->status()) : std::nullopt;
    HttpAnswer page{200, kStatusPageContentType,
                    render_status_page(
                        *sources_.policy.current(), sources_.status_counters, sources_.recent_decisions, node_status,
                        sources_.claims ? sources_.claims->status() : std::vector<DraWatchStatus>(),
                        sources_.pools ? sources_.pools->status() : std::vector<PoolWatchStatus>(),
                        sources_.history ? std::optional(sources_.history->status()) : std::nullopt, sources_.version)};
    page.page = true;
    return page;
  }
  return json_error(404, "no route " + std::string(request.method) + " " + std::string(request.path) +
                             " (use GET /metrics, GET /status)");
}

HttpAnswer MetricsRoutes::body_too_large() const { return refusal(413, "the metrics port reads no request bodies"); }

HttpAnswer MetricsRoutes::length_required() const { return refusal(411, "the metrics port reads no request bodies"); }

}  // namespace gpusizer
