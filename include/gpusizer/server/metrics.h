// Prometheus metrics of the webhook (docs/observability.md "Metrics" lists each). Metric
// references are cached: counting a review takes no label maps; label
// combinations are created once, on first use.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "gpusizer/admission/pod_decision.h"
#include "gpusizer/admission/review.h"
#include "gpusizer/server/transport.h"

namespace gpusizer {

class Metrics {
 public:
  // Namespaces past namespace_cap distinct ones are counted as "other", so
  // a cluster with thousands of namespaces cannot blow up the series count;
  // a namespace that is not a DNS-1123 label (longer than 63, control
  // characters: never sent by the API server) as "invalid".
  Metrics(const std::string& version, std::size_t namespace_cap);

  // One answered review: counts it, its duration, and (unless dry-run, which
  // changes nothing) the corrections, resources added, denials and GPUs.
  void count_review(Endpoint endpoint, const ReviewOutcome& outcome, double seconds);
  // A changed policy file: reloaded (accepted), or rejected and the old one kept.
  void count_reload(bool accepted);
  // Marks this policy as the active one (gpu_sizer_policy_info).
  void set_policy(const Policy& policy);
  void set_certificate_expiry(int64_t unix_seconds);
  // A changed certificate file pair, by result (reloaded, invalid, expired,
  // not_yet_valid: certificates.h CertificateReload). REQUIRES: one of those.
  void count_certificate_reload(std::string_view result);
  // The node watch (node_watcher.h): what it knows, when it last synced,
  // and each watch started again by reason (timeout: the API server ended
  // it; gone: 410, listed again; error: the connection failed).
  void set_node_inventory(std::size_t nodes, std::size_t gpu_shapes);
  void set_node_sync_age(double seconds);
  void count_node_watch_restart(std::string_view reason);
  // The DRA watch (claim_watcher.h): the objects it knows of each kind
  // (ResourceClaimTemplate, ResourceClaim, DeviceClass), and each watch
  // started again, by kind and reason (as the node watch's).
  void set_dra_objects(std::string_view kind, std::size_t objects);
  void count_dra_watch_restart(std::string_view kind, std::string_view reason);
  // The history refresh (history_refresher.h): each read of Prometheus by
  // result (ok, error), and what the snapshot in use holds and when it was
  // read (0: never).
  void count_history_refresh(bool ok);
  void set_history(std::size_t containers, int64_t read_at_unix_seconds);
  // The webhook port's connections (transport.h): the cap, once at start;
  // then what they do, before each scrape.
  void set_max_connections(std::size_t max_connections);
  void set_connections(const ConnectionCounts& counts);

  // The registry in Prometheus text exposition format.
  std::string render() const;

 private:
  prometheus::Counter& review_counter(Endpoint endpoint, const ReviewOutcome& outcome);
  // REQUIRES: mutex_ held.
  const std::string& namespace_label(const std::string& ns);
  // Up to three labels; a label whose name is nullptr is left out.
  using CounterLabels = std::array<std::pair<const char*, std::string_view>, 3>;
  // REQUIRES: mutex_ held.
  prometheus::Counter& labelled_counter(prometheus::Family<prometheus::Counter>& family, const CounterLabels& labels);

  std::shared_ptr<prometheus::Registry> registry_;
  std::size_t namespace_cap_;

  prometheus::Family<prometheus::Counter>& reviews_;
  prometheus::Family<prometheus::Counter>& corrections_;
  prometheus::Family<prometheus::Counter>& cpu_added_;
  prometheus::Family<prometheus::Counter>& memory_added_;
  prometheus::Family<prometheus::Counter>& denials_;
  prometheus::Family<prometheus::Counter>& bypasses_;
  prometheus::Family<prometheus::Counter>& history_raises_;
  prometheus::Family<prometheus::Gauge>& policy_info_;
  std::array<prometheus::Histogram*, 2> durations_{};  // [endpoint]
  prometheus::Histogram* pod_gpus_ = nullptr;
  std::array<prometheus::Counter*, 2> reloads_{};  // [reloaded, rejected]
  prometheus::Gauge* certificate_expiry_ = nullptr;
  std::array<prometheus::Counter*, 4> certificate_reloads_{};  // [kCertificateReloadResults]
  prometheus::Gauge* nodes_known_ = nullptr;
  prometheus::Gauge* gpu_shapes_known_ = nullptr;
  prometheus::Gauge* node_sync_age_ = nullptr;
  prometheus::Family<prometheus::Counter>* node_watch_restarts_ = nullptr;
  prometheus::Family<prometheus::Gauge>* dra_objects_ = nullptr;
  std::array<prometheus::Counter*, 2> history_refreshes_{};  // [ok, error]
  prometheus::Gauge* history_containers_ = nullptr;
  prometheus::Gauge* history_read_at_ = nullptr;
  prometheus::Family<prometheus::Counter>* dra_watch_restarts_ = nullptr;
  prometheus::Family<prometheus::Counter>* node_caps_ = nullptr;
  prometheus::Gauge* connections_max_ = nullptr;
  prometheus::Gauge* connections_open_ = nullptr;
  prometheus::Counter* connections_shed_ = nullptr;
  prometheus::Counter* connections_evicted_ = nullptr;
  prometheus::Gauge* large_requests_waiting_ = nullptr;
  // What the transport's running totals were at the last scrape.
  std::uint64_t connections_shed_counted_ = 0;     // REQUIRES: mutex_ held
  std::uint64_t connections_evicted_counted_ = 0;  // REQUIRES: mutex_ held

  // reviews_total by (kind, operation, endpoint, decision, dry_run): a fixed
  // grid of slots, one row per kind label (the kind table's kinds, "other"
  // and "unknown"), each filled the first time its combination is seen.
  static constexpr std::size_t kOperations = 5;
  std::vector<std::atomic<prometheus::Counter*>> review_slots_;

  // Counters labelled by profile or reason, namespace and one more label,
  // found without allocating (heterogeneous lookup) and created under the
  // mutex on first use.
  std::mutex mutex_;
  std::set<std::string, std::less<>> namespaces_;
  // (family, label values) -> counter
  using LabelledKey = std::tuple<const void*, std::string, std::string, std::string>;
  using LabelledView = std::tuple<const void*, std::string_view, std::string_view, std::string_view>;
  // Compares keys and views as views: a tuple of strings and one of views
  // are different types, which not every compiler orders against each other.
  struct LabelledLess {
    using is_transparent = void;
    static LabelledView view(const LabelledKey& k) {
      return {std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k)};
    }
    static const LabelledView& view(const LabelledView& v) { return v; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return view(a) < view(b);
    }
  };
  std::map<LabelledKey, prometheus::Counter*, LabelledLess> labelled_;
  prometheus::Gauge* policy_gauge_ = nullptr;
};

}  // namespace gpusizer
