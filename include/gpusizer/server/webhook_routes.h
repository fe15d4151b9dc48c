// What the webhook answers, whatever carries the bytes: the routes, the
// reviews with their counting and logging, and the answers to requests a
// transport refuses before reading their body (411, 413). Both transports
// (transport.h) answer only through this, so they answer alike.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>

#include "gpusizer/server/claim_watcher.h"
#include "gpusizer/server/metrics.h"
#include "gpusizer/server/node_watcher.h"
#include "gpusizer/server/policy_store.h"
#include "gpusizer/server/status_page.h"
#include "gpusizer/server/transport.h"

namespace gpusizer {

// Everything an answer needs from the running server.
struct WebhookState {
  const PolicyStore& policy;
  Metrics& metrics;
  StatusCounters& status_counters;
  RecentDecisions& recent_decisions;
  const std::atomic<bool>& stopping;        // /readyz fails once set
  bool require_client_certificate = false;  // --client-ca was given
  std::size_t max_body_bytes = 0;
  const NodeWatcher* nodes = nullptr;         // the cluster's nodes; nullptr: not watched
  const ClaimWatcher* claims = nullptr;       // the cluster's DRA objects; nullptr: not watched
  const HistoryRefresher* history = nullptr;  // what earlier runs used; nullptr: no --prometheus
};

class WebhookRoutes final : public HttpHandler {
 public:
  explicit WebhookRoutes(WebhookState state);

  // POST /mutate, POST /validate, GET /healthz, GET /readyz; 404 naming
  // them for anything else. Reviews are counted, listed on /status and
  // logged.
  HttpAnswer answer(const HttpRequestView& request) const override;
  // Each names --max-body-bytes.
  HttpAnswer body_too_large() const override;
  HttpAnswer length_required() const override;

 private:
  HttpAnswer review(Endpoint endpoint, const HttpRequestView& request) const;

  WebhookState state_;
  std::string body_limit_;  // "8388608 bytes (--max-body-bytes)"
};

}  // namespace gpusizer
