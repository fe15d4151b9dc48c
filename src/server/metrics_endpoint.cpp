#include "gpusizer/server/metrics_endpoint.h"

#include <chrono>
#include <utility>

namespace gpusizer {

namespace {

// One event loop, short deadlines (a scrape is one small GET), a handful of
// connections. The deadlines bound how long it can hold up shutdown:
// keep-alive + read timeout, 5 s.
TransportOptions metrics_transport_options(const ListenAddress& address) {
  TransportOptions options;
  options.address = address;
  options.threads = 1;
  options.max_body_bytes = 0;
  options.read_timeout = std::chrono::seconds(3);
  options.keep_alive_timeout = std::chrono::seconds(2);
  options.max_connections = 64;
  return options;
}

}  // namespace

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::open(const ListenAddress& address, MetricsSources sources) {
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint(std::move(sources)));
  auto transport = open_plain_http_transport(metrics_transport_options(address), endpoint->routes_);
  if (!transport) return Status::io_error("cannot listen for metrics: " + transport.error());
  endpoint->transport_ = std::move(transport).value();
  endpoint->thread_ = std::thread([raw = endpoint.get()] { raw->transport_->run(); });
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  transport_->stop();
  thread_.join();
}

}  // namespace gpusizer
