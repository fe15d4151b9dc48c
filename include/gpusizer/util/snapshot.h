// A value replaced now and then (the policy, the TLS certificate) and read
// by every request: readers take a shared_ptr to the current one, so a
// replacement never changes it under a request in flight.
#pragma once

#include <memory>
#include <mutex>

namespace gpusizer {

// A mutex rather than std::atomic<std::shared_ptr>: libstdc++ 12 implements
// that with a lock bit ThreadSanitizer cannot see (it reports a race on
// every reload), and copying a shared_ptr under an uncontended mutex costs
// the same tens of nanoseconds.
template <typename T>
class Snapshot {
 public:
  explicit Snapshot(std::shared_ptr<const T> value) : value_(std::move(value)) {}

  std::shared_ptr<const T> load() const {
    std::lock_guard lock(mutex_);
    return value_;
  }

  void store(std::shared_ptr<const T> value) {
    std::lock_guard lock(mutex_);
    value_.swap(value);  // the old value is released outside the lock
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const T> value_;
};

}  // namespace gpusizer
