// `serve --transport httplib`: cpp-httplib's blocking server, a pool thread
// per connection.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include <httplib.h>
#include <sys/socket.h>

#include "gpusizer/server/connection_deadlines.h"
#include "gpusizer/server/transport.h"

namespace gpusizer {

namespace {

// Whether the connection presented a client certificate that verified
// against --client-ca.
bool verified_client(const httplib::Request& req) {
  return req.ssl && SSL_get0_peer_certificate(req.ssl) && SSL_get_verify_result(req.ssl) == X509_V_OK;
}

void reply(httplib::Response& res, const HttpAnswer& answer) {
  res.status = answer.status;
  // Debian's cpp-httplib (0.11) has no set_content(std::string&&): it copies.
  res.set_content(answer.body, std::string(answer.content_type));
  // The body is left unread, so the connection cannot carry another request.
  if (answer.close) res.set_header("Connection", "close");
}

class HttplibTransport final : public Transport {
 public:
  HttplibTransport(const TransportOptions& options, const TlsSetup& tls, const HttpHandler& handler)
      : deadlines_(options.keep_alive_timeout + options.read_timeout),
        server_([this, &tls](SSL_CTX& context) {
          deadlines_.track(context);
          tls_set_up_ = tls(context);
          return tls_set_up_.ok();
        }),
        handler_(handler) {
    const std::size_t threads = static_cast<std::size_t>(std::max(1, options.threads));
    // The pool size compiled into Debian's libcpp-httplib is fixed; size it here.
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server_.set_keep_alive_max_count(1u << 20);
    server_.set_keep_alive_timeout(options.keep_alive_timeout.count());
    server_.set_read_timeout(options.read_timeout.count());
    server_.set_write_timeout(options.read_timeout.count());
    server_.set_payload_max_length(options.max_body_bytes);
    server_.set_tcp_nodelay(true);

    auto route = [this](const httplib::Request& req, httplib::Response& res) {
      deadlines_.request_arrived(req.ssl);
      const std::string content_type = req.get_header_value("Content-Type");
      reply(res, handler_.answer(view_of(req, content_type)));
    };
    for (const char* path : {"/mutate", "/validate"}) server_.Post(path, route);
    for (const char* path : {"/healthz", "/readyz"}) server_.Get(path, route);
    // cpp-httplib applies the body limit only to a body with a Content-Length
    // and would read a chunked or unframed one whole into memory.
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!needs_length(req.method, req.has_header("Content-Length"), req.has_header("Transfer-Encoding"))) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      reply(res, handler_.length_required());
      return httplib::Server::HandlerResponse::Handled;
    });
    // Called once an answer is written: the next request's deadline starts,
    // and an answer saying Connection: close (its body unread) ends the
    // connection, which cpp-httplib would otherwise go on reading.
    server_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      deadlines_.answered(req.ssl);
      if (req.ssl && res.get_header_value("Connection") == "close") ::shutdown(SSL_get_fd(req.ssl), SHUT_RDWR);
    });
    // 413 (body too long) and 404 (no route) come from cpp-httplib itself.
    server_.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      const std::string content_type = req.get_header_value("Content-Type");
      reply(res, res.status == 413   ? handler_.body_too_large()
                 : res.status == 404 ? handler_.answer(view_of(req, content_type))
                                     : refusal(res.status, "request failed"));
    });
  }

  Status bind(const ListenAddress& address) {
    if (!server_.is_valid())
      return tls_set_up_.ok() ? Status::io_error("the TLS server could not be set up") : tls_set_up_;
    port_ = address.port == 0 ? server_.bind_to_any_port(address.host)
                              : (server_.bind_to_port(address.host, address.port) ? address.port : -1);
    if (port_ < 0)
      return Status::io_error("cannot listen on " + address.host + ":" + std::to_string(address.port) +
                              ": address in use or not available");
    return {};
  }

  int port() const override { return port_; }

  void run() override {
    server_.listen_after_bind();
    listen_returned_ = true;
  }

  // cpp-httplib's stop() does nothing before its listen loop runs: a stop
  // asked for during start-up waits for the loop (or for it to have ended).
  void stop() override {
    while (!server_.is_running() && !listen_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    server_.stop();
  }

 private:
  // cpp-httplib has already decoded the path and split off the query.
  static HttpRequestView view_of(const httplib::Request& req, const std::string& content_type) {
    return {req.method, req.path, content_type, verified_client(req), req.body};
  }

  // Declared before the server: it must outlive every connection.
  ConnectionDeadlines deadlines_;
  Status tls_set_up_;  // what the TLS set-up said, read once the server is built
  httplib::SSLServer server_;
  const HttpHandler& handler_;
  int port_ = -1;
  std::atomic<bool> listen_returned_{false};
};

}  // namespace

Result<std::unique_ptr<Transport>> open_httplib_transport(const TransportOptions& options, const TlsSetup& tls,
                                                          const HttpHandler& handler) {
  auto transport = std::make_unique<HttplibTransport>(options, tls, handler);
  if (Status bound = transport->bind(options.address); !bound.ok()) return bound;
  return std::unique_ptr<Transport>(std::move(transport));
}

}  // namespace gpusizer
