// The history refresh (docs/history.md "In the webhook"): a thread that
// reads history from Prometheus (history/prometheus_history.h) every
// --history-refresh seconds while the policy's history.mode is not off,
// and swaps the snapshot decisions read. Never on the admission path: a
// decision takes the snapshot in use, however old; Prometheus down or slow
// keeps the last one, is counted and shown on /status, and is logged once
// per outage.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gpusizer/history/prometheus_history.h"
#include "gpusizer/server/metrics.h"
#include "gpusizer/server/policy_store.h"
#include "gpusizer/sizing/history.h"
#include "gpusizer/util/snapshot.h"

namespace gpusizer {

// What /status shows of the refresh.
struct HistoryRefreshStatus {
  std::string url;
  int64_t last_attempt = 0;  // Unix seconds; 0: none yet
  int64_t read_at = 0;       // of the snapshot in use; 0: none
  std::size_t containers = 0;
  std::string error;  // the last attempt's, empty when it read
};

class HistoryRefresher {
 public:
  // metrics may be nullptr (tests).
  HistoryRefresher(PrometheusSource source, const PolicyStore& policy, int refresh_seconds, Metrics* metrics);
  ~HistoryRefresher();  // stops
  HistoryRefresher(const HistoryRefresher&) = delete;
  HistoryRefresher& operator=(const HistoryRefresher&) = delete;

  void start();
  // Idempotent. A read in flight is cut, not waited out (its connection
  // shut), so stop() returns at once unless a connection is being set up
  // (at most 5 s).
  void stop();

  // The snapshot decisions use now; nullptr before the first read.
  std::shared_ptr<const HistorySnapshot> snapshot() const { return snapshot_.load(); }
  HistoryRefreshStatus status() const;

 private:
  void run();
  void refresh();

  const PrometheusSource source_;
  const PolicyStore& policy_;
  const int refresh_seconds_;
  Metrics* metrics_;
  Snapshot<HistorySnapshot> snapshot_{nullptr};
  HistoryReadStop read_stop_;
  mutable std::mutex mutex_;  // guards status_, stopping_ and finished_
  std::condition_variable wake_;
  HistoryRefreshStatus status_;
  bool stopping_ = false;
  bool finished_ = false;  // run() has returned
  std::thread thread_;
};

}  // namespace gpusizer
