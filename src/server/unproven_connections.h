// The connections of one event loop that have not yet had a request
// answered, oldest first, as the asio transport evicts them past
// --max-connections: clients that connect and send nothing (or too slowly)
// cannot keep the API server out.
//
// Those that have sent nothing go first: a flood of bare connections
// evicts its own before a client that has begun its handshake (which 1023
// later bare connections used to evict).
//
// The lists are guarded by a mutex because the acceptor, on another
// thread, takes the connection to evict: a burst of accepts never asks
// twice for the same connection or for one that is gone. Asking the loop
// to choose, later, lost evictions whenever its lists had emptied, and
// accepting stalled behind them.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>

namespace gpusizer::asio_transport {

class UnprovenConnections;

// What the lists know of a connection (Connection is a template; the
// lists are not).
class Unproven {
 public:
  Unproven() = default;
  virtual ~Unproven() = default;
  Unproven(const Unproven&) = delete;
  Unproven& operator=(const Unproven&) = delete;
  // Closes the connection, saying why in the log. Runs on its loop.
  virtual void evict() = 0;

 private:
  friend class UnprovenConnections;
  using List = std::list<std::weak_ptr<Unproven>>;
  List* list_ = nullptr;  // null: on neither list (answered, or taken to be evicted)
  List::iterator at_;
};

class UnprovenConnections {
 public:
  // A new connection, silent until spoke().
  void add(const std::shared_ptr<Unproven>& connection);
  // Its first byte arrived: it goes after every silent connection.
  void spoke(Unproven& connection);
  // A request of it has been answered, or it is closing.
  void remove(Unproven& connection);
  // Takes the oldest silent connection off the lists, else the oldest that
  // has spoken; null when there is none.
  std::shared_ptr<Unproven> take_oldest();
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  Unproven::List silent_;
  Unproven::List spoken_;
};

}  // namespace gpusizer::asio_transport
