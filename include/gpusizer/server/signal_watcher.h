// The signals serve() handles: SIGTERM and SIGINT stop it, SIGHUP reads the
// policy and the certificate again. One thread receives them with sigwait,
// instead of a handler that could run on any thread mid-request.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

#include <signal.h>

#include "gpusizer/server/file_reloader.h"

namespace gpusizer {

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread and so in every
// thread it starts afterwards: call it before any other thread starts.
// SIGHUP's default action would end the process, losing the requests in
// flight.
sigset_t block_handled_signals();

class SignalWatcher {
 public:
  // Waits for the signals in `signals` (block_handled_signals) on its own
  // thread: each SIGHUP calls reloader.reload_now(); the first SIGTERM or
  // SIGINT calls on_stop with its name ("SIGTERM") and ends the thread.
  SignalWatcher(const sigset_t& signals, FileReloader& reloader, std::function<void(const char* signal)> on_stop);
  // Returns once on_stop has returned, raising SIGTERM first when no stop
  // signal came (the server ended on its own).
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  std::atomic<bool> stopped_{false};  // a stop signal came
  std::thread thread_;                // last: it starts in the constructor and reads stopped_
};

}  // namespace gpusizer
