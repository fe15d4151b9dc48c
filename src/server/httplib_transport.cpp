// `serve --transport httplib`: cpp-httplib's blocking server, a pool thread
// per connection.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

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

// `close`: the connection ends after this answer (its body was left
// unread, or the server is draining).
void reply(httplib::Response& res, const HttpAnswer& answer, bool close) {
  res.status = answer.status;
  // Debian's cpp-httplib (0.11) has no set_content(std::string&&): it copies.
  res.set_content(answer.body, std::string(answer.content_type));
  if (answer.close || close) res.set_header("Connection", "close");
}

// cpp-httplib's own ThreadPool queues every accepted connection in memory
// until a thread is free. This one holds at most `max_connections`, served
// and waiting: past that, enqueue() blocks the listening thread, so new
// connections wait in the kernel's listen queue (bounded by its backlog)
// instead of in this process.
class BoundedThreadPool final : public httplib::TaskQueue {
 public:
  BoundedThreadPool(std::size_t threads, std::size_t max_connections)
      : max_connections_(std::max(threads, max_connections)) {
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~BoundedThreadPool() override { shutdown(); }
  BoundedThreadPool(const BoundedThreadPool&) = delete;
  BoundedThreadPool& operator=(const BoundedThreadPool&) = delete;

  void enqueue(std::function<void()> fn) override {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [this] { return connections_ < max_connections_ || stopping_; });
    ++connections_;
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }

  // Lets a listening thread blocked in enqueue() go, so cpp-httplib's
  // listen loop can see it has been stopped.
  void release_waiting_accept() {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    room_.notify_all();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      finishing_ = true;
    }
    ready_.notify_all();
    room_.notify_all();
    for (auto& worker : workers_) {
      if (worker.joinable()) worker.join();
    }
  }

  std::size_t connections() const {
    std::lock_guard lock(mutex_);
    return connections_;
  }

 private:
  void work() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return !jobs_.empty() || finishing_; });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();  // serves the connection until it closes
      std::lock_guard lock(mutex_);
      --connections_;
      room_.notify_one();
    }
  }

  const std::size_t max_connections_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;  // a job to run, or finishing
  std::condition_variable room_;   // room for one more connection, or stopping
  std::deque<std::function<void()>> jobs_;
  std::size_t connections_ = 0;  // queued or being served
  bool stopping_ = false;
  bool finishing_ = false;
  std::vector<std::thread> workers_;
};

// cpp-httplib deletes the queue it is given when listening ends; the pool
// stays with the transport, so connections() can read it at any time.
class PoolHandle final : public httplib::TaskQueue {
 public:
  explicit PoolHandle(BoundedThreadPool& pool) : pool_(pool) {}
  void enqueue(std::function<void()> fn) override { pool_.enqueue(std::move(fn)); }
  void shutdown() override { pool_.shutdown(); }

 private:
  BoundedThreadPool& pool_;
};

class HttplibTransport final : public Transport {
 public:
  HttplibTransport(const TransportOptions& options, const TlsSetup& tls, const HttpHandler& handler)
      : deadlines_(options.keep_alive_timeout + options.read_timeout),
        pool_(static_cast<std::size_t>(std::max(1, options.threads)), options.max_connections),
        server_([this, &tls](SSL_CTX& context) {
          deadlines_.track(context);
          tls_set_up_ = tls(context);
          return tls_set_up_.ok();
        }),
        handler_(handler) {
    // The pool size compiled into Debian's libcpp-httplib is fixed; the
    // transport's own pool is used instead.
    server_.new_task_queue = [this] { return new PoolHandle(pool_); };
    server_.set_keep_alive_max_count(1u << 20);
    server_.set_keep_alive_timeout(options.keep_alive_timeout.count());
    server_.set_read_timeout(options.read_timeout.count());
    server_.set_write_timeout(options.read_timeout.count());
    server_.set_payload_max_length(options.max_body_bytes);
    server_.set_tcp_nodelay(true);

    auto route = [this](const httplib::Request& req, httplib::Response& res) {
      deadlines_.request_arrived(req.ssl);
      const std::string content_type = req.get_header_value("Content-Type");
      reply(res, handler_.answer(view_of(req, content_type)), draining_);
    };
    for (const char* path : {"/mutate", "/validate"}) server_.Post(path, route);
    for (const char* path : {"/healthz", "/readyz"}) server_.Get(path, route);
    // cpp-httplib applies the body limit only to a body with a Content-Length
    // and would read a chunked or unframed one whole into memory.
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!needs_length(req.method, req.has_header("Content-Length"), req.has_header("Transfer-Encoding"))) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      reply(res, handler_.length_required(), true);
      return httplib::Server::HandlerResponse::Handled;
    });
    // A client waiting for "100 Continue" with a body over the limit gets
    // 413 at once: it sends no body to read first.
    server_.set_expect_100_continue_handler(
        [this, max_body_bytes = options.max_body_bytes](const httplib::Request& req, httplib::Response& res) {
          if (req.get_header_value<std::uint64_t>("Content-Length") <= max_body_bytes) return 100;
          reply(res, handler_.body_too_large(), true);
          return 413;
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
      reply(res,
            res.status == 413   ? handler_.body_too_large()
            : res.status == 404 ? handler_.answer(view_of(req, content_type))
                                : refusal(res.status, "request failed"),
            draining_);
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

  void drain() override { draining_ = true; }

  // cpp-httplib's stop() does nothing before its listen loop runs: a stop
  // asked for during start-up waits for the loop (or for it to have ended).
  void stop() override {
    drain();
    while (!server_.is_running() && !listen_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    server_.stop();
    pool_.release_waiting_accept();
  }

  // cpp-httplib never sheds: past the cap it stops accepting.
  ConnectionCounts connections() const override { return {pool_.connections(), 0, 0, 0}; }

 private:
  // cpp-httplib has already decoded the path and split off the query.
  static HttpRequestView view_of(const httplib::Request& req, const std::string& content_type) {
    return {req.method, req.path, content_type, verified_client(req), req.body, req.body.capacity()};
  }

  // Declared before the server: they must outlive every connection.
  ConnectionDeadlines deadlines_;
  BoundedThreadPool pool_;
  Status tls_set_up_;  // what the TLS set-up said, read once the server is built
  httplib::SSLServer server_;
  const HttpHandler& handler_;
  int port_ = -1;
  std::atomic<bool> listen_returned_{false};
  std::atomic<bool> draining_{false};
};

}  // namespace

Result<std::unique_ptr<Transport>> open_httplib_transport(const TransportOptions& options, const TlsSetup& tls,
                                                          const HttpHandler& handler) {
  auto transport = std::make_unique<HttplibTransport>(options, tls, handler);
  if (Status bound = transport->bind(options.address); !bound.ok()) return bound;
  return std::unique_ptr<Transport>(std::move(transport));
}

}  // namespace gpusizer
