// `serve --transport asio` (the default), and the metrics port: Boost.Asio
// event loops reading HTTP/1.1 with Boost.Beast's parser (asio_connection.h).
// Each loop runs on its own thread and owns the connections accepted onto
// it.
//
// cpp-httplib (the other transport) holds a thread per connection, so 16
// busy connections on one core meant 16 threads taking turns: a third of the
// CPU went to the kernel switching them, a connection past --threads waited
// for a free one, and a burst of requests all finished near the burst's end
// (docs/performance.md).
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <spdlog/spdlog.h>

#include "asio_connection.h"
#include "gpusizer/server/log.h"
#include "gpusizer/server/transport.h"

namespace gpusizer {

namespace {

using namespace asio_transport;

// While the connection limit is reached: one log line when it starts, then
// at most one a minute.
constexpr std::chrono::seconds kLimitLogInterval{60};
// How far evictions asked for may lag behind accepts (a loop busy with a
// review evicts late) before accepting pauses, and how often it looks
// again while paused.
constexpr std::size_t kEvictionSlack = 64;
constexpr std::chrono::milliseconds kEvictionWait{1};
// After a failed accept (out of file descriptors, most likely): try again
// shortly rather than spin.
constexpr std::chrono::milliseconds kAcceptRetryWait{100};

template <class Layer>
class AsioTransport final : public Transport {
 public:
  AsioTransport(const TransportOptions& options, const HttpHandler& handler)
      : settings_{handler,
                  tls_ ? &*tls_ : nullptr,
                  options.read_timeout,
                  options.keep_alive_timeout,
                  options.keep_alive_timeout + options.read_timeout,
                  options.max_body_bytes,
                  options.large_body_bytes,
                  options.max_connections},
        loops_(make_loops(options.threads)) {}

  Status open(const ListenAddress& address, const TlsSetup* tls) {
    if (tls) {
      if (Status set_up = (*tls)(*tls_->native_handle()); !set_up.ok()) return set_up;
    }
    beast::error_code ec;
    tcp::resolver resolver(loops_[0]->context);
    const auto resolved = resolver.resolve(address.host, std::to_string(address.port),
                                           tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || resolved.empty()) {
      return Status::io_error("cannot listen on " + address.host + ": " + (ec ? ec.message() : "no address"));
    }
    const tcp::endpoint endpoint = resolved.begin()->endpoint();
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status::io_error("cannot listen on " + address.host + ":" + std::to_string(address.port) + ": " +
                              ec.message());
    }
    accept();
    return {};
  }

  int port() const override { return acceptor_.local_endpoint().port(); }

  void run() override {
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < loops_.size(); ++i) threads.emplace_back([this, i] { loops_[i]->context.run(); });
    loops_[0]->context.run();
    for (auto& thread : threads) thread.join();
    settings_.lane.join();
  }

  void drain() override { settings_.draining = true; }

  void stop() override {
    drain();
    if (stopping_.exchange(true)) return;
    net::post(loops_[0]->context, [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
      retry_.cancel();
    });
    // Each loop returns once its connections have ended: answered and
    // closed, or idle past their keep-alive timeout.
    for (auto& loop : loops_) loop->keep_running.reset();
  }

  ConnectionCounts connections() const override {
    return {settings_.open.load(), settings_.shed.load(), settings_.evicted.load(), settings_.lane.waiting()};
  }

 private:
  static std::vector<std::unique_ptr<Loop>> make_loops(int threads) {
    std::vector<std::unique_ptr<Loop>> loops;
    for (int i = 0; i < std::max(1, threads); ++i) loops.push_back(std::make_unique<Loop>());
    return loops;
  }

  // New connections go to the loops in turn. Past --max-connections, the
  // oldest connection that has had no request answered is closed to make
  // room, or when every connection has had one the new one is closed at
  // once: a flood of connections costs the server nothing it keeps.
  void accept() {
    Loop& loop = *loops_[next_loop_++ % loops_.size()];
    acceptor_.async_accept(loop.context, [this, &loop](beast::error_code ec, tcp::socket socket) {
      if (stopping_ || ec == net::error::operation_aborted) return;
      if (ec) {
        log_event(spdlog::level::warn, "accepting a connection failed", {{"error", ec.message()}});
        return wait_then(kAcceptRetryWait, [this] { accept(); });
      }
      place(std::move(socket), loop);
    });
  }

  void place(tcp::socket socket, Loop& loop) {
    if (settings_.open.load() < settings_.max_connections || make_room()) {
      ++settings_.open;
      ++settings_.starting;
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      net::post(loop.context, [this, &loop, socket = std::move(socket)]() mutable {
        std::make_shared<Connection<Layer>>(std::move(socket), settings_, loop)->start();
        --settings_.starting;
      });
    } else if (settings_.starting.load() > 0) {
      // Connections accepted a moment ago are not yet on their loops'
      // lists, so there is nothing to evict yet, but there will be.
      return wait_then(kEvictionWait,
                       [this, &loop, socket = std::move(socket)]() mutable { place(std::move(socket), loop); });
    } else {
      shed(socket);
    }
    accept_when_room();
  }

  // Evictions run on the evicted connections' loops, later than the
  // accepts that asked for them. While they lag kEvictionSlack behind, the
  // next connection waits in the kernel's listen backlog: shedding it
  // instead shed about one in five connections of a 3000-connection flood,
  // and the API server's among them.
  void accept_when_room() {
    if (settings_.open.load() < settings_.max_connections + kEvictionSlack) return accept();
    wait_then(kEvictionWait, [this] { accept_when_room(); });
  }

  // Runs `then` on the acceptor's loop after `delay`, unless stop() cancels
  // it first.
  template <class Then>
  void wait_then(std::chrono::milliseconds delay, Then then) {
    retry_.expires_after(delay);
    retry_.async_wait([then = std::move(then)](beast::error_code waited) mutable {
      if (!waited) then();
    });
  }

  // At the cap: takes the oldest connection without an answered request of
  // the loop with the most of them, and asks that loop to close it. False
  // when there is none.
  bool make_room() {
    Loop* most = nullptr;
    std::size_t most_unproven = 0;
    for (auto& loop : loops_) {
      const std::size_t unproven = loop->unproven.size();
      if (!most || unproven > most_unproven) {
        most = loop.get();
        most_unproven = unproven;
      }
    }
    std::shared_ptr<Unproven> oldest = most->unproven.take_oldest();
    if (!oldest) return false;
    ++settings_.evicted;
    net::post(most->context, [oldest = std::move(oldest)] { oldest->evict(); });
    log_limit_reached();
    return true;
  }

  void shed(tcp::socket& socket) {
    ++settings_.shed;
    beast::error_code ignored;
    socket.close(ignored);
    log_limit_reached();
  }

  void log_limit_reached() {
    const auto now = Clock::now();
    if (now < next_limit_log_) return;
    next_limit_log_ = now + kLimitLogInterval;
    log_event(spdlog::level::warn,
              "connection limit reached: closing the oldest connections without an answered request, or new "
              "connections when there are none",
              {{"max_connections", settings_.max_connections},
               {"evicted_total", settings_.evicted.load()},
               {"shed_total", settings_.shed.load()}});
  }

  static std::optional<net::ssl::context> make_tls() {
    if constexpr (std::is_same_v<Layer, TlsLayer>) {
      return std::optional<net::ssl::context>(std::in_place, net::ssl::context::tls_server);
    }
    return std::nullopt;
  }

  std::optional<net::ssl::context> tls_ = make_tls();  // before settings_, which points to it
  Settings settings_;
  std::vector<std::unique_ptr<Loop>> loops_;  // before the acceptor: it runs on loops_[0]
  tcp::acceptor acceptor_{loops_.at(0)->context};
  net::steady_timer retry_{loops_.at(0)->context};
  std::size_t next_loop_ = 0;
  std::atomic<bool> stopping_{false};
  Clock::time_point next_limit_log_{};  // touched only by the acceptor's loop
};

template <class Layer>
Result<std::unique_ptr<Transport>> open(const TransportOptions& options, const TlsSetup* tls,
                                        const HttpHandler& handler) {
  auto transport = std::make_unique<AsioTransport<Layer>>(options, handler);
  if (Status opened = transport->open(options.address, tls); !opened.ok()) return opened;
  return std::unique_ptr<Transport>(std::move(transport));
}

}  // namespace

Result<std::unique_ptr<Transport>> open_asio_transport(const TransportOptions& options, const TlsSetup& tls,
                                                       const HttpHandler& handler) {
  return open<TlsLayer>(options, &tls, handler);
}

Result<std::unique_ptr<Transport>> open_plain_http_transport(const TransportOptions& options,
                                                             const HttpHandler& handler) {
  return open<PlainLayer>(options, nullptr, handler);
}

}  // namespace gpusizer
