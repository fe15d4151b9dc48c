#include "gpusizer/server/connection_deadlines.h"

#include <algorithm>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "gpusizer/server/log.h"

namespace gpusizer {

namespace {

// Where each context keeps its tracker, for the info callback.
int context_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return "unknown";
  char host[INET6_ADDRSTRLEN] = {0};
  int port = 0;
  if (address.ss_family == AF_INET) {
    const auto* ip4 = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &ip4->sin_addr, host, sizeof host);
    port = ntohs(ip4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* ip6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &ip6->sin6_addr, host, sizeof host);
    port = ntohs(ip6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

void log_connection_cut(const std::string& peer, std::chrono::milliseconds allowance) {
  log_event(spdlog::level::info, "closed a connection that did not send a whole request in time",
            {{"peer", peer}, {"seconds", std::chrono::duration<double>(allowance).count()}});
}

ConnectionDeadlines::ConnectionDeadlines(std::chrono::milliseconds allowance)
    : allowance_(allowance), watcher_([this] { watch(); }) {}

ConnectionDeadlines::~ConnectionDeadlines() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  watcher_.join();
}

// Each tracked connection holds its tracker in ex data, so SSL_free (which
// cpp-httplib calls before it closes the socket) tells the tracker the file
// descriptor is no longer this connection's.
int ConnectionDeadlines::connection_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, &ConnectionDeadlines::on_free);
  return index;
}

void ConnectionDeadlines::track(SSL_CTX& context) {
  connection_index();
  SSL_CTX_set_ex_data(&context, context_index(), this);
  SSL_CTX_set_info_callback(&context, &ConnectionDeadlines::on_info);
}

void ConnectionDeadlines::on_info(const SSL* ssl, int where, int) {
  if (!(where & SSL_CB_HANDSHAKE_START)) return;
  auto* self = static_cast<ConnectionDeadlines*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), context_index()));
  if (self) self->start(ssl);
}

void ConnectionDeadlines::on_free(void* parent, void* data, CRYPTO_EX_DATA*, int, long, void*) {
  if (data) static_cast<ConnectionDeadlines*>(data)->forget(static_cast<const SSL*>(parent));
}

void ConnectionDeadlines::start(const SSL* ssl) {
  std::lock_guard lock(mutex_);
  const auto [it, added] = connections_.try_emplace(ssl, Connection{SSL_get_fd(ssl), Clock::now() + allowance_});
  if (!added) return;
  SSL_set_ex_data(const_cast<SSL*>(ssl), connection_index(), this);
  wake_.notify_all();
}

void ConnectionDeadlines::forget(const SSL* ssl) {
  std::lock_guard lock(mutex_);
  connections_.erase(ssl);
}

void ConnectionDeadlines::request_arrived(const SSL* ssl) {
  std::lock_guard lock(mutex_);
  if (auto it = connections_.find(ssl); it != connections_.end()) it->second.due = Clock::time_point::max();
}

void ConnectionDeadlines::answered(const SSL* ssl) {
  std::lock_guard lock(mutex_);
  if (auto it = connections_.find(ssl); it != connections_.end()) it->second.due = Clock::now() + allowance_;
  wake_.notify_all();
}

void ConnectionDeadlines::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const auto now = Clock::now();
    auto next = Clock::time_point::max();
    std::vector<std::string> peers;
    for (auto& [ssl, connection] : connections_) {
      if (connection.due > now) {
        next = std::min(next, connection.due);
        continue;
      }
      // Under the lock, so the descriptor cannot have been closed and
      // reused: forget() runs before cpp-httplib closes it. The shutdown
      // ends the read the connection's thread is blocked in.
      peers.push_back(peer_address(connection.fd));
      ::shutdown(connection.fd, SHUT_RDWR);
      connection.due = Clock::time_point::max();
    }
    if (!peers.empty()) {
      lock.unlock();
      for (const auto& peer : peers) log_connection_cut(peer, allowance_);
      lock.lock();
      continue;
    }
    if (next == Clock::time_point::max()) {
      wake_.wait(lock);
    } else {
      wake_.wait_until(lock, next);
    }
  }
}

}  // namespace gpusizer
