#include "gpusizer/server/signal_watcher.h"

#include <utility>

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "gpusizer/server/log.h"

namespace gpusizer {

sigset_t block_handled_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

SignalWatcher::SignalWatcher(const sigset_t& signals, FileReloader& reloader,
                             std::function<void(const char* signal)> on_stop)
    : thread_([this, signals, &reloader, on_stop = std::move(on_stop)] {
        while (true) {
          int signal = 0;
          sigwait(&signals, &signal);
          if (signal != SIGHUP) {
            stopped_ = true;
            on_stop(signal == SIGTERM ? "SIGTERM" : "SIGINT");
            return;
          }
          log_event(spdlog::level::info, "SIGHUP: reading the policy and the certificate again");
          reloader.reload_now();
        }
      }) {}

SignalWatcher::~SignalWatcher() {
  if (!stopped_) kill(getpid(), SIGTERM);
  thread_.join();
}

}  // namespace gpusizer
