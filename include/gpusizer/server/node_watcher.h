// The cluster's nodes, watched (docs/rules.md "Node caps", docs/operations.md
// "Node inventory"): v1/Node listed and watched (list_watch.h) into an
// immutable inventory (sizing/nodes.h) swapped atomically. Decisions never
// wait on the watch: before the first list completes, or while the API
// server is unreachable, they get the last inventory (or none) with
// NodeInventory::stale saying so.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpusizer/server/kube_client.h"
#include "gpusizer/server/list_watch.h"
#include "gpusizer/server/metrics.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/util/snapshot.h"

namespace gpusizer {

struct NodeWatchOptions : ListWatchOptions {
  std::vector<std::string> gpu_resources;  // for the GPU shapes gauge
};

// What /status shows of the watch.
struct NodeWatchStatus : WatchStatus {
  std::size_t nodes = 0;
  std::size_t gpu_shapes = 0;
};

class NodeWatcher : private ListWatch::Sink {
 public:
  // metrics may be nullptr (tests).
  NodeWatcher(ApiServerConfig config, NodeWatchOptions options, Metrics* metrics);
  ~NodeWatcher() override;  // stops
  NodeWatcher(const NodeWatcher&) = delete;
  NodeWatcher& operator=(const NodeWatcher&) = delete;

  // Starts the watch on a thread of its own.
  void start() { watch_.start(); }
  // Ends the request in flight and the thread; idempotent.
  void stop() { watch_.stop(); }

  // The nodes decisions use now; never blocks on the watch.
  std::shared_ptr<const NodeInventory> inventory() const { return inventory_.load(); }
  // The machines the cluster's autoscalers may launch (pool_watcher.h),
  // kept beside the nodes in every inventory from now on; any thread.
  void set_launchable(std::vector<NodeClass> machines);
  NodeWatchStatus status() const;
  // Since the last sync (ListWatch::seconds_since_sync), for the
  // gpu_sizer_node_inventory_sync_age_seconds gauge.
  double seconds_since_sync() const { return watch_.seconds_since_sync(); }

 private:
  void list_started() override;
  void listed(JsonView item) override;
  void list_completed() override;
  bool changed_by(std::string_view type, JsonView object) override;
  void publish(const WatchStatus& status) override;
  void count_restart(const char* reason) override;

  const std::vector<std::string> gpu_resources_;
  Metrics* metrics_;
  InventoryBuilder builder_;                   // the watch thread's
  std::unique_ptr<InventoryBuilder> listing_;  // the list in progress (the watch thread's)
  Snapshot<NodeInventory> inventory_;
  // The last inventory of the nodes alone, and the launchable machines
  // published with it: either changes, the two are published together.
  std::mutex publish_mutex_;
  std::shared_ptr<const NodeInventory> last_nodes_;
  std::vector<NodeClass> launchable_;
  mutable std::mutex mutex_;  // guards the counts
  std::size_t nodes_ = 0;
  std::size_t gpu_shapes_ = 0;
  ListWatch watch_;  // last: it calls the members above
};

}  // namespace gpusizer
