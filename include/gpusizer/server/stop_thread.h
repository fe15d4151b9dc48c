// Ending a thread that waits on a request it cannot be woken from.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace gpusizer {

// Calls stop_request() (an ApiClient's or a HistoryReadStop's stop()) and
// again every 10 ms until `finished` (guarded by `mutex`, signalled on
// `wake`) holds, then joins `thread`. A stop that lands after a request
// has its connection and before it is sent is missed by that request
// (kube_client.h), which would otherwise run to its timeout.
template <class StopRequest>
void stop_until_finished(std::mutex& mutex, std::condition_variable& wake, const bool& finished, std::thread& thread,
                         StopRequest stop_request) {
  std::unique_lock lock(mutex);
  while (thread.joinable() && !finished) {
    lock.unlock();
    stop_request();
    lock.lock();
    wake.wait_for(lock, std::chrono::milliseconds(10), [&] { return finished; });
  }
  lock.unlock();
  if (thread.joinable()) thread.join();
}

}  // namespace gpusizer
