// The cluster's DRA objects, watched (docs/rules.md "DRA claims",
// docs/operations.md "DRA objects"): ResourceClaimTemplates, ResourceClaims,
// DeviceClasses and ResourceSlices of resource.k8s.io/v1 (Kubernetes 1.34
// and later), each
// listed and watched on its own (list_watch.h) into one immutable inventory
// (sizing/device_claims.h) swapped atomically. A claim a pod owns (made
// from a template for that pod) is not kept: no new pod names it.
// Decisions never wait on the watch: a claim not known yet is warned
// about, as without the watch.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpusizer/server/kube_client.h"
#include "gpusizer/server/list_watch.h"
#include "gpusizer/server/metrics.h"
#include "gpusizer/sizing/device_claims.h"
#include "gpusizer/util/snapshot.h"

namespace gpusizer {

// What /status shows of one kind's watch.
struct DraWatchStatus : WatchStatus {
  DraKind kind = DraKind::kClaimTemplate;
  std::size_t objects = 0;
};

class ClaimWatcher {
 public:
  // metrics may be nullptr (tests).
  ClaimWatcher(const ApiServerConfig& config, const ListWatchOptions& options, Metrics* metrics);
  ~ClaimWatcher();  // stops
  ClaimWatcher(const ClaimWatcher&) = delete;
  ClaimWatcher& operator=(const ClaimWatcher&) = delete;

  // Starts each kind's watch on a thread of its own.
  void start();
  // Ends them; idempotent.
  void stop();

  // The DRA objects decisions use now; never blocks on the watch.
  std::shared_ptr<const ClaimInventory> inventory() const { return inventory_.load(); }
  // Templates, claims, classes.
  std::vector<DraWatchStatus> status() const;

 private:
  // One kind's watch: its objects go to the shared builder.
  class KindSink : public ListWatch::Sink {
   public:
    KindSink(ClaimWatcher& owner, DraKind kind) : owner_(owner), kind_(kind) {}
    void list_started() override { listing_.clear(); }
    void listed(JsonView item) override;
    void list_completed() override;
    bool changed_by(std::string_view type, JsonView object) override;
    void publish(const WatchStatus& status) override;
    void count_restart(const char* reason) override;

   private:
    ClaimWatcher& owner_;
    const DraKind kind_;
    std::vector<DraObject> listing_;  // the list in progress (its watch thread's)
  };

  // Makes the builder's objects what decisions see. REQUIRES: mutex_ held.
  void publish_locked();

  Metrics* metrics_;
  mutable std::mutex mutex_;  // guards builder_ and states_: each kind's watch has a thread
  ClaimInventoryBuilder builder_;
  std::array<WatchStatus::State, 4> states_{};  // by kind, for the inventory's stale
  Snapshot<ClaimInventory> inventory_;
  std::array<KindSink, 4> sinks_;
  std::array<std::unique_ptr<ListWatch>, 4> watches_;  // last: they call the members above
};

}  // namespace gpusizer
