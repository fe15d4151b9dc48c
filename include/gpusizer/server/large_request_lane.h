// Requests with large bodies are read and answered one at a time, on a
// worker thread of their own. Without it, N clients sending bodies of
// --max-body-bytes would make the server hold N of them at once (a thousand
// 8 MiB bodies is 8 GiB), and a review that takes long to decide (an Argo
// Workflow with thousands of templates) would hold an event loop, and every
// connection on it, for that long. Small requests never wait for the lane.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include <boost/asio/thread_pool.hpp>

namespace gpusizer {

class LargeRequestLane {
 public:
  // Called when the lane is free for a waiter; false when the waiter has
  // gone (its connection closed), so the lane goes to the next one.
  using Waiter = std::function<bool()>;

  LargeRequestLane() = default;
  LargeRequestLane(const LargeRequestLane&) = delete;
  LargeRequestLane& operator=(const LargeRequestLane&) = delete;

  // Calls `waiter` now if the lane is free, else once the requests before
  // it have left, in the order they entered. A waiter that returns true
  // holds the lane until it calls leave(), exactly once.
  void enter(Waiter waiter);
  void leave();

  // Runs `work` on the lane's worker thread.
  void run(std::function<void()> work);

  // Waits for the work given to run() to finish. Call after every holder
  // has left.
  void join();

  // Requests waiting for the lane, not counting the one holding it.
  std::size_t waiting() const;

 private:
  mutable std::mutex mutex_;
  bool held_ = false;
  std::deque<Waiter> waiting_;
  // Started on the first large request: a transport that never has one
  // (the metrics port) runs no worker thread.
  std::optional<boost::asio::thread_pool> worker_;
};

}  // namespace gpusizer
