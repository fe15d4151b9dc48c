#include "gpusizer/server/history_refresher.h"

#include <chrono>
#include <ctime>
#include <utility>

#include "gpusizer/server/log.h"
#include "gpusizer/server/stop_thread.h"

namespace gpusizer {

HistoryRefresher::HistoryRefresher(PrometheusSource source, const PolicyStore& policy, int refresh_seconds,
                                   Metrics* metrics)
    : source_(std::move(source)), policy_(policy), refresh_seconds_(refresh_seconds), metrics_(metrics) {
  status_.url = source_.url;
}

HistoryRefresher::~HistoryRefresher() { stop(); }

void HistoryRefresher::start() {
  thread_ = std::thread([this] { run(); });
}

void HistoryRefresher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  stop_until_finished(mutex_, wake_, finished_, thread_, [this] { read_stop_.stop(); });
}

HistoryRefreshStatus HistoryRefresher::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

void HistoryRefresher::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    refresh();
    lock.lock();
    wake_.wait_for(lock, std::chrono::seconds(refresh_seconds_), [&] { return stopping_; });
  }
  finished_ = true;
  wake_.notify_all();
}

void HistoryRefresher::refresh() {
  const std::shared_ptr<const Policy> policy = policy_.current();
  const HistoryPolicy& history = policy->rule_settings.get<HistoryPolicy>();
  if (history.mode == HistoryPolicy::Mode::kOff) return;
  auto read = read_history(source_, history, &read_stop_);
  const auto now = static_cast<int64_t>(std::time(nullptr));
  std::lock_guard lock(mutex_);
  if (stopping_) return;  // a read cut by stop() is no outage
  if (metrics_) metrics_->count_history_refresh(read.ok());
  const bool was_failing = !status_.error.empty();
  status_.last_attempt = now;
  if (!read) {
    // Logged once per outage: the next success says it is over.
    if (!was_failing) {
      log_event(spdlog::level::warn, "cannot read history from Prometheus; decisions keep the last snapshot",
                {{"prometheus", source_.url}, {"error", read.error()}});
    }
    status_.error = read.error();
    return;
  }
  auto snapshot = std::make_shared<const HistorySnapshot>(std::move(read).value());
  status_.error.clear();
  status_.read_at = snapshot->fetched_at;
  status_.containers = snapshot->containers.size();
  if (was_failing)
    log_event(spdlog::level::info, "reading history from Prometheus again", {{"prometheus", source_.url}});
  if (metrics_) metrics_->set_history(status_.containers, status_.read_at);
  snapshot_.store(std::move(snapshot));
}

}  // namespace gpusizer
