#include "gpusizer/server/large_request_lane.h"

#include <utility>

#include <boost/asio/post.hpp>

namespace gpusizer {

void LargeRequestLane::enter(Waiter waiter) {
  {
    std::lock_guard lock(mutex_);
    if (held_) {
      waiting_.push_back(std::move(waiter));
      return;
    }
    held_ = true;
  }
  if (!waiter()) leave();
}

void LargeRequestLane::leave() {
  // The lane passes to the first waiter still there. Waiters are called
  // outside the lock: one that is still there posts to its event loop,
  // which may be this thread's.
  while (true) {
    Waiter next;
    {
      std::lock_guard lock(mutex_);
      if (waiting_.empty()) {
        held_ = false;
        return;
      }
      next = std::move(waiting_.front());
      waiting_.pop_front();
    }
    if (next()) return;
  }
}

void LargeRequestLane::run(std::function<void()> work) {
  std::lock_guard lock(mutex_);
  if (!worker_) worker_.emplace(1);
  boost::asio::post(*worker_, std::move(work));
}

void LargeRequestLane::join() {
  std::lock_guard lock(mutex_);
  if (worker_) worker_->join();
}

std::size_t LargeRequestLane::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

}  // namespace gpusizer
