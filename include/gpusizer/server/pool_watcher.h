// The cluster's autoscaler pools, watched (docs/nodes.md "Autoscaler pools",
// docs/operations.md "Autoscaler pools"): Karpenter NodePools,
// EC2NodeClasses and AKSNodeClasses, and GKE ComputeClasses, each watched
// (list_watch.h) once API discovery shows its CRD is served; a kind not
// served is looked for again every `rediscover`. The machines they may
// launch (sizing/autoscaler_pools.h) go to the node watch, which keeps them
// beside the nodes in every inventory. Decisions never wait on this watch:
// until a kind is listed, its machines are not known.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpusizer/server/kube_client.h"
#include "gpusizer/server/list_watch.h"
#include "gpusizer/server/node_watcher.h"
#include "gpusizer/sizing/autoscaler_pools.h"

namespace gpusizer {

// What /status shows of one kind's watch.
struct PoolWatchStatus : WatchStatus {
  std::string kind;        // "NodePool"
  std::string collection;  // "/apis/karpenter.sh/v1/nodepools" once found; empty while not served
  std::string discovery;   // why it is not watched: "not served", the last discovery error
  std::size_t objects = 0;
};

struct PoolWatchOptions : ListWatchOptions {
  // How often a kind the API server does not serve (its CRD is not
  // installed) is looked for again.
  std::chrono::milliseconds rediscover{std::chrono::minutes(5)};
};

class PoolWatcher {
 public:
  // The node watch outlives this.
  PoolWatcher(ApiServerConfig config, PoolWatchOptions options, NodeWatcher& nodes);
  ~PoolWatcher();  // stops
  PoolWatcher(const PoolWatcher&) = delete;
  PoolWatcher& operator=(const PoolWatcher&) = delete;

  // Discovers the kinds, then watches those served, on threads of their own.
  void start();
  // Ends discovery and the watches; idempotent.
  void stop();

  // One per kind: NodePool, EC2NodeClass, AKSNodeClass, ComputeClass.
  std::vector<PoolWatchStatus> status() const;
  // The machines the pools may launch now.
  std::size_t launchable() const;

 private:
  static constexpr std::size_t kKinds = 4;

  // One kind's watch: its objects by name.
  class KindSink : public ListWatch::Sink {
   public:
    KindSink(PoolWatcher& owner, std::size_t kind) : owner_(owner), kind_(kind) {}
    void list_started() override { listing_.clear(); }
    void listed(JsonView item) override;
    void list_completed() override;
    bool changed_by(std::string_view type, JsonView object) override;
    void publish(const WatchStatus& status) override;
    void count_restart(const char* /*reason*/) override {}

   private:
    PoolWatcher& owner_;
    const std::size_t kind_;
    std::map<std::string, AutoscalerObjects> listing_;  // the list in progress (its watch thread's)
  };

  // Looks for each kind not found yet until all are, or stop().
  void discover();
  // The machines of all kinds' objects to the node watch. REQUIRES: mutex_ held.
  void publish_locked();

  const ApiServerConfig config_;
  const PoolWatchOptions options_;
  NodeWatcher& nodes_;
  ApiClient discovery_client_;

  mutable std::mutex mutex_;  // guards all below: each kind's watch has a thread
  std::condition_variable wake_;
  bool stopping_ = false;
  bool discovered_ = false;                                               // the discovery thread is done
  std::array<std::map<std::string, AutoscalerObjects>, kKinds> objects_;  // by kind, then name
  std::array<PoolWatchStatus, kKinds> states_;
  std::size_t launchable_ = 0;
  bool truncated_ = false;  // past kMaxLaunchableMachines, logged once until it is not
  std::array<KindSink, kKinds> sinks_;
  std::array<std::unique_ptr<ListWatch>, kKinds> watches_;  // made once a kind is found
  std::thread discovery_;                                   // last: it calls the members above
};

}  // namespace gpusizer
