// The metrics port (`serve --metrics-listen`): MetricsRoutes served over
// plain HTTP on its own transport and thread, with deadlines short enough
// that a scrape in progress holds up shutdown by at most 5 s.
#pragma once

#include <memory>
#include <thread>

#include "gpusizer/server/metrics_routes.h"
#include "gpusizer/server/transport.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

class MetricsEndpoint {
 public:
  // Binds `address` and starts serving; fails naming the address.
  static Result<std::unique_ptr<MetricsEndpoint>> open(const ListenAddress& address, MetricsSources sources);
  ~MetricsEndpoint();  // stops, and returns once the scrapes in flight are answered
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  int port() const { return transport_->port(); }
  // Stops accepting; any thread, more than once.
  void stop() { transport_->stop(); }

 private:
  explicit MetricsEndpoint(MetricsSources sources) : routes_(std::move(sources)) {}

  MetricsRoutes routes_;
  std::unique_ptr<Transport> transport_;
  std::thread thread_;
};

}  // namespace gpusizer
