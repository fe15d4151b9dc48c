// The cluster's nodes, watched (docs/rules.md "Node caps", docs/operations.md
// "Node inventory"): list v1/Node, then watch from the list's
// resourceVersion; list again on 410 Gone; reconnect with capped
// exponential backoff and jitter. Decisions read an immutable inventory
// (sizing/nodes.h) swapped atomically and never wait on the watch: before
// the first list completes, or while the API server is unreachable, they
// get the last inventory (or none) with NodeInventory::stale saying so.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpusizer/server/kube_client.h"
#include "gpusizer/server/metrics.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/util/snapshot.h"

namespace gpusizer {

struct NodeWatchOptions {
  std::chrono::milliseconds backoff_min{500};
  std::chrono::milliseconds backoff_max{30000};
  // The API server ends each watch after this (timeoutSeconds); the watch
  // starts again from the last resourceVersion seen.
  int watch_seconds = 290;
  // A watch the API server (or a proxy) ends sooner than this without an
  // event is a failure, backed off like one: its opening was no sync.
  std::chrono::milliseconds shortest_watch{1000};
  int list_page_size = 500;
  std::vector<std::string> gpu_resources;  // for the GPU shapes gauge
  // For tests: ApiClient::set_before_send for the watch's client.
  std::function<void()> before_send;
};

// What /status shows of the watch.
struct NodeWatchStatus {
  enum class State {
    kStarting,  // the first list has not completed
    kSynced,    // listed, and watching
    kLost,      // was listed; the watch lost the API server and is reconnecting
  };
  State state = State::kStarting;
  std::string api_server;  // ApiServerConfig::description
  std::string last_error;  // empty when none since the last sync
  std::optional<std::chrono::system_clock::time_point> last_sync;
  uint64_t restarts = 0;  // watches started again after the first
  std::size_t nodes = 0;
  std::size_t gpu_shapes = 0;
};
// "starting", "synced", "lost".
std::string_view to_string(NodeWatchStatus::State state);

class NodeWatcher {
 public:
  // metrics may be nullptr (tests).
  NodeWatcher(ApiServerConfig config, NodeWatchOptions options, Metrics* metrics);
  ~NodeWatcher();  // stops
  NodeWatcher(const NodeWatcher&) = delete;
  NodeWatcher& operator=(const NodeWatcher&) = delete;

  // Starts the watch on a thread of its own.
  void start();
  // Ends the request in flight and the thread; idempotent.
  void stop();

  // The nodes decisions use now; never blocks on the watch.
  std::shared_ptr<const NodeInventory> inventory() const { return inventory_.load(); }
  NodeWatchStatus status() const;
  // Since the last sync (or the start, before any): a list, a watch event,
  // a watch the API server answered 200 (unless it ended it at once
  // without an event), a watch it ended on time. For the
  // gpu_sizer_node_inventory_sync_age_seconds gauge.
  double seconds_since_sync() const;

 private:
  enum class WatchEnd { kTimeout, kGone, kError, kStopped };
  struct SyncTime {
    std::optional<std::chrono::system_clock::time_point> wall;  // NodeWatchStatus::last_sync
    std::chrono::steady_clock::time_point steady;
  };

  void run();
  Status list(std::string& resource_version);
  WatchEnd watch(std::string& resource_version);
  // Applies one watch event line; kGone for a 410 ERROR event, kError (and
  // `error` says why) for another ERROR event or a line that is not JSON.
  std::optional<WatchEnd> apply_event(std::string_view line, std::string& resource_version, std::string& error);
  void publish(NodeWatchStatus::State state, const std::string& error);
  void count_restart(const char* reason);
  // Makes now the last sync; returns the one it replaced.
  SyncTime mark_synced();
  void restore_sync(const SyncTime& time);
  // Sleeps before the next attempt; false when stopped meanwhile.
  bool back_off(int& attempt);

  ApiClient client_;
  const NodeWatchOptions options_;
  Metrics* metrics_;
  InventoryBuilder builder_;  // the watch thread's own
  Snapshot<NodeInventory> inventory_;

  mutable std::mutex mutex_;  // guards status_ and finished_; wakes back_off and stop
  std::condition_variable wake_;
  NodeWatchStatus status_;
  std::chrono::steady_clock::time_point last_sync_steady_;
  std::atomic<bool> stopping_{false};
  bool finished_ = false;  // run() has returned
  bool heard_ = false;     // the watch in flight delivered an event or ended normally (the watch thread's)
  std::thread thread_;
};

}  // namespace gpusizer
