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
};

struct HttpAnswer {
  int status = 200;
  std::string_view content_type;  // a literal
  std::string body;
  // The connection ends after this answer (the request's body was not read).
  bool close = false;
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
};

class Transport {
 public:
  virtual ~Transport() = default;
  // The port it listens on (the one picked, when 0 was asked for).
  virtual int port() const = 0;
  // Serves until stop(); returns once the requests being read or answered
  // then are answered.
  virtual void run() = 0;
  // Stops accepting and closes idle connections. Any thread, before or
  // during run(), more than once.
  virtual void stop() = 0;
};

// Both bind before returning, so a busy port fails here, naming the address.
// The handler must outlive the transport.
Result<std::unique_ptr<Transport>> open_asio_transport(const TransportOptions& options, const TlsSetup& tls,
                                                       const HttpHandler& handler);
Result<std::unique_ptr<Transport>> open_httplib_transport(const TransportOptions& options, const TlsSetup& tls,
                                                          const HttpHandler& handler);
// The one named "asio" or "httplib" (serve --transport); any other name
// fails, saying which names there are.
Result<std::unique_ptr<Transport>> open_transport(std::string_view name, const TransportOptions& options,
                                                  const TlsSetup& tls, const HttpHandler& handler);

}  // namespace gpusizer
