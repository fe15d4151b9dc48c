// What the webhook answers, whatever carries the bytes: the routes, the
// reviews with their counting and logging, and the answers to requests a
// transport refuses before reading their body (411, 413). Both transports
// (transport.h) answer only through this, so they answer alike.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>

#include "gpusizer/metrics.h"
#include "gpusizer/policy_store.h"
#include "gpusizer/status_page.h"

namespace gpusizer {

// One request as a transport read it.
struct HttpRequestView {
  std::string_view method;
  std::string_view path;  // percent-decoded, without the query
  std::string_view content_type;
  // A client certificate was presented and verified against --client-ca.
  bool verified_client = false;
  std::string_view body;
};

struct HttpAnswer {
  int status = 200;
  std::string_view content_type;  // a literal
  std::string body;
  // The connection ends after this answer (the request's body was not read).
  bool close = false;
};

// Everything an answer needs from the running server.
struct WebhookState {
  const PolicyStore& policy;
  Metrics& metrics;
  StatusCounters& status_counters;
  RecentDecisions& recent_decisions;
  const std::atomic<bool>& stopping;  // /readyz fails once set
  bool require_client_certificate = false;  // --client-ca was given
  std::size_t max_body_bytes = 0;
};

class WebhookRoutes {
 public:
  explicit WebhookRoutes(WebhookState state);

  // POST /mutate, POST /validate, GET /healthz, GET /readyz; 404 naming
  // them for anything else. Reviews are counted, listed on /status and
  // logged.
  HttpAnswer answer(const HttpRequestView& request) const;

  // A body longer than --max-body-bytes (413), and one without a
  // Content-Length (411): both left unread, so the connection closes.
  HttpAnswer body_too_large() const;
  HttpAnswer length_required() const;
  // A request that could not be read as HTTP: `status` (400, 431, ...)
  // with `message`, and the connection closes.
  static HttpAnswer unreadable(int status, const std::string& message);

  // Whether a request must be refused with length_required() before its
  // body is read: chunked bodies, and bodies of unknown length (read to
  // the end of the connection). The API server always sends a length.
  static bool needs_length(std::string_view method, bool has_content_length, bool has_transfer_encoding);

 private:
  HttpAnswer review(Endpoint endpoint, const HttpRequestView& request) const;

  WebhookState state_;
  std::string body_limit_;  // "8388608 bytes (--max-body-bytes)"
};

// "/mutate" from "/mutate?timeout=3s", "/%FF" decoded to the byte 0xFF.
// A '%' not followed by two hex digits is kept as it is.
std::string decoded_path(std::string_view target);

}  // namespace gpusizer
