// The HTTPS transports of the webhook port: they read requests, hand them
// to an HttpHandler (the webhook's is WebhookRoutes) and write the answers. Two implementations, chosen with
// `serve --transport`:
//  - asio (the default): Boost.Asio/Beast event loops, one per thread
//    (default: the CPUs the process may use); any number of connections,
//    requests answered in arrival order.
//  - httplib: cpp-httplib, one pool thread per connection (--threads,
//    default 32); connections past that wait for a thread.
// Both give every connection the same deadlines: its TLS handshake and its
// first request within keep-alive + read timeout of accepting it, each
// later request within that allowance of the previous answer, an idle
// connection closed after the keep-alive timeout.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <openssl/ssl.h>

#include "gpusizer/util/result.h"

namespace gpusizer {

// One request as a transport read it.
struct HttpRequestView {
  std::string_view method;
  std::string_view path;  // percent-decoded, without the query
  std::string_view content_type;
  // A client certificate was presented and verified against the client CA.
  bool verified_client = false;
  std::string_view body;
  // The bytes readable from body.data(): kJsonPadding more than the body
  // when the transport reserved them, and the JSON reader reads it in place.
  std::size_t body_capacity = 0;
};

struct HttpAnswer {
  int status = 200;
  std::string_view content_type;  // a literal
  std::string body;
  // The connection ends after this answer (the request's body was not read).
  bool close = false;
  // A page for people (the status page): sent with Cache-Control: no-store
  // and X-Content-Type-Options: nosniff.
  bool page = false;
};

// What a transport asks of the application.
class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  virtual HttpAnswer answer(const HttpRequestView& request) const = 0;
  // A body longer than the limit (413), and one without a Content-Length
  // (411): both refused unread, so the connection closes after them.
  virtual HttpAnswer body_too_large() const = 0;
  virtual HttpAnswer length_required() const = 0;
};

// Whether a request must be refused with length_required() before its body
// is read: chunked bodies, and bodies of unknown length (read to the end of
// the connection). The API server always sends a length.
bool needs_length(std::string_view method, bool has_content_length, bool has_transfer_encoding);

// {"error": message} with `status`, as application/json.
HttpAnswer json_error(int status, const std::string& message);

// A json_error that closes the connection: for requests that could not be
// read (400, 411, 413, 431) or failed (500).
HttpAnswer refusal(int status, const std::string& message);

// "/mutate" from "/mutate?timeout=3s", "/%FF" decoded to the byte 0xFF.
// A '%' not followed by two hex digits is kept as it is.
std::string decoded_path(std::string_view target);

struct ListenAddress {
  std::string host;
  int port = 0;
};

// Sets the certificate, protocols, ciphers and client CA on a server
// context; fails, saying why, when it cannot.
using TlsSetup = std::function<Status(SSL_CTX& context)>;

struct TransportOptions {
  ListenAddress address;  // port 0 picks a free port
  int threads = 1;        // asio: event loops; httplib: connections served at once
  std::size_t max_body_bytes = 8u << 20;
  std::chrono::seconds read_timeout{10};
  std::chrono::seconds keep_alive_timeout{5};
  // Connections open at once, the ones being served and the ones waiting.
  // Past it, asio closes the oldest connection that has had no request
  // answered (evicted) or, when every open one has, the new one (shed);
  // httplib stops accepting until one ends, so the others wait in the
  // kernel's listen queue. Either way none waits in the server's memory.
  std::size_t max_connections = 1024;
  // asio: requests with a body over this are read and answered one at a
  // time, off the event loops (large_request_lane.h).
  std::size_t large_body_bytes = 64u << 10;
};

// What a transport's connections are doing, for the metrics.
struct ConnectionCounts {
  std::size_t open = 0;          // accepted and not yet closed
  std::uint64_t shed = 0;        // closed at accept: --max-connections were open, all answered before
  std::uint64_t evicted = 0;     // closed to make room: the oldest without an answered request
  std::size_t waiting_lane = 0;  // large requests waiting for their turn
};

class Transport {
 public:
  virtual ~Transport() = default;
  // The port it listens on (the one picked, when 0 was asked for).
  virtual int port() const = 0;
  // Serves until stop(); returns once the requests being read or answered
  // then are answered.
  virtual void run() = 0;
  // From now on every answer closes its connection (Connection: close),
  // so clients move to other replicas while this one still answers. Any
  // thread, more than once.
  virtual void drain() = 0;
  // Drains and stops accepting. Each open connection still gets its
  // request answered: the one being read or answered, and one that arrives
  // on an idle connection before its keep-alive timeout (a client may have
  // sent it already; the API server does not retry a POST on a closed
  // connection). Any thread, before or during run(), more than once.
  virtual void stop() = 0;
  virtual ConnectionCounts connections() const = 0;
};

// Both bind before returning, so a busy port fails here, naming the address.
// The handler must outlive the transport.
Result<std::unique_ptr<Transport>> open_asio_transport(const TransportOptions& options, const TlsSetup& tls,
                                                       const HttpHandler& handler);
// Plain HTTP on the asio transport: the metrics port (/metrics, /status),
// with the same deadlines and connection cap.
Result<std::unique_ptr<Transport>> open_plain_http_transport(const TransportOptions& options,
                                                             const HttpHandler& handler);
Result<std::unique_ptr<Transport>> open_httplib_transport(const TransportOptions& options, const TlsSetup& tls,
                                                          const HttpHandler& handler);
// The one named "asio" or "httplib" (serve --transport); any other name
// fails, saying which names there are.
Result<std::unique_ptr<Transport>> open_transport(std::string_view name, const TransportOptions& options,
                                                  const TlsSetup& tls, const HttpHandler& handler);

}  // namespace gpusizer
