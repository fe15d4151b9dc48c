// One kind of the cluster's objects, watched as Kubernetes clients do: list
// it (page by page), then watch from the list's resourceVersion; list again
// on 410 Gone; reconnect with capped exponential backoff and jitter. What
// is kept of the objects is the Sink's (the node inventory, the DRA
// objects); decisions read the snapshots it publishes and never wait on the
// watch. The node watch (node_watcher.h) and the DRA watch
// (claim_watcher.h) are each a Sink of one or more of these.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "gpusizer/json/json_view.h"
#include "gpusizer/server/kube_client.h"

namespace gpusizer {

struct ListWatchOptions {
  std::chrono::milliseconds backoff_min{500};
  std::chrono::milliseconds backoff_max{30000};
  // The API server ends each watch after this (timeoutSeconds); the watch
  // starts again from the last resourceVersion seen.
  int watch_seconds = 290;
  // A watch the API server (or a proxy) ends sooner than this without an
  // event is a failure, backed off like one: its opening was no sync.
  std::chrono::milliseconds shortest_watch{1000};
  int list_page_size = 500;
  // For tests: ApiClient::set_before_send for the watch's client.
  std::function<void()> before_send;
};

// What /status shows of a watch.
struct WatchStatus {
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
};
// "starting", "synced", "lost".
std::string_view to_string(WatchStatus::State state);

// "14:03:07 UTC", for messages that say how old what is known is.
std::string clock_text(std::chrono::system_clock::time_point time);

class ListWatch {
 public:
  // What is kept of the objects, called on the watch's thread only.
  class Sink {
   public:
    virtual ~Sink() = default;
    // A list starts: the items it gives replace all that is known once it
    // completes (list_completed), and not before.
    virtual void list_started() = 0;
    virtual void listed(JsonView item) = 0;
    virtual void list_completed() = 0;
    // A watch event (ADDED, MODIFIED or DELETED); whether what is known changed.
    virtual bool changed_by(std::string_view type, JsonView object) = 0;
    // The watch's state, or what is known, changed: make it what decisions
    // see, before `status` is what status() returns.
    virtual void publish(const WatchStatus& status) = 0;
    // A watch was started again: "timeout", "gone" or "error".
    virtual void count_restart(const char* reason) = 0;
  };

  // `path`: the collection ("/api/v1/nodes"); `what`: its objects in log
  // lines ("node"). The sink outlives the watch.
  ListWatch(ApiServerConfig config, std::string path, std::string what, ListWatchOptions options, Sink& sink);
  ~ListWatch();  // stops
  ListWatch(const ListWatch&) = delete;
  ListWatch& operator=(const ListWatch&) = delete;

  // Lists and watches on a thread of its own. Until then status() is
  // kStarting, and nothing is published: the sink publishes what it knows
  // at first itself.
  void start();
  // Ends the request in flight and the thread; idempotent.
  void stop();

  WatchStatus status() const;
  // Since the last sync (or the start, before any): a list, a watch event,
  // a watch the API server answered 200 (unless it ended it at once
  // without an event), a watch it ended on time.
  double seconds_since_sync() const;

 private:
  enum class WatchEnd { kTimeout, kGone, kError, kStopped };
  struct SyncTime {
    std::optional<std::chrono::system_clock::time_point> wall;  // WatchStatus::last_sync
    std::chrono::steady_clock::time_point steady;
  };

  void run();
  Status list(std::string& resource_version);
  WatchEnd watch(std::string& resource_version);
  // Applies one watch event line; kGone for a 410 ERROR event, kError (and
  // `error` says why) for another ERROR event or a line that is not JSON.
  std::optional<WatchEnd> apply_event(std::string_view line, std::string& resource_version, std::string& error);
  void publish(WatchStatus::State state, const std::string& error);
  void count_restart(const char* reason);
  // Logs a failure at warning level, or at debug level when it repeats the
  // last one: an API server without the kind (404) fails every attempt.
  void log_failure(const std::string& what_failed, const std::string& error);
  // Makes now the last sync; returns the one it replaced.
  SyncTime mark_synced();
  void restore_sync(const SyncTime& time);
  // Sleeps before the next attempt; false when stopped meanwhile.
  bool back_off(int& attempt);

  ApiClient client_;
  const std::string path_;
  const std::string what_;
  const ListWatchOptions options_;
  Sink& sink_;

  mutable std::mutex mutex_;  // guards status_ and finished_; wakes back_off and stop
  std::condition_variable wake_;
  WatchStatus status_;
  std::chrono::steady_clock::time_point last_sync_steady_;
  std::atomic<bool> stopping_{false};
  bool finished_ = false;    // run() has returned
  bool heard_ = false;       // the watch in flight delivered an event or ended normally (the watch thread's)
  std::string last_logged_;  // the last failure logged (the watch thread's)
  std::thread thread_;
};

}  // namespace gpusizer
