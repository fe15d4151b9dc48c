#include "gpusizer/server/metrics.h"

#include <algorithm>
#include <string_view>

#include <prometheus/text_serializer.h>

#include "gpusizer/util/kubernetes_names.h"
#include "gpusizer/workloads/workloads.h"

namespace gpusizer {

namespace {

// The kind labels of reviews_total: each kind of the built-in table (by
// name, as the review carries it; Volcano's Job and batch's share "Job"),
// then "other" (a kind the table does not name) and "unknown" (a review
// too malformed to say).
const std::vector<std::string>& review_kind_labels() {
  static const std::vector<std::string> labels = [] {
    std::vector<std::string> names;
    for (const WorkloadKind& row : builtin_workload_kinds()) {
      if (std::find(names.begin(), names.end(), row.kind) == names.end()) names.push_back(row.kind);
    }
    names.emplace_back("other");
    names.emplace_back("unknown");
    return names;
  }();
  return labels;
}

constexpr std::array<std::string_view, 5> kOperationNames = {"CREATE", "UPDATE", "DELETE", "CONNECT", "unknown"};
constexpr std::array<std::string_view, 2> kEndpointNames = {"mutate", "validate"};
constexpr std::array<std::string_view, 4> kCertificateReloadResults = {"reloaded", "invalid", "expired",
                                                                       "not_yet_valid"};

template <std::size_t N>
std::size_t index_of(const std::array<std::string_view, N>& names, std::string_view name, std::size_t fallback) {
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? fallback : static_cast<std::size_t>(it - names.begin());
}

std::size_t endpoint_index(Endpoint endpoint) { return endpoint == Endpoint::kMutate ? 0 : 1; }

}  // namespace

Metrics::Metrics(const std::string& version, std::size_t namespace_cap)
    : registry_(std::make_shared<prometheus::Registry>()),
      namespace_cap_(namespace_cap),
      reviews_(prometheus::BuildCounter()
                   .Name("gpu_sizer_reviews_total")
                   .Help("AdmissionReviews answered, by object kind, operation, endpoint, decision and dry-run")
                   .Register(*registry_)),
      corrections_(prometheus::BuildCounter()
                       .Name("gpu_sizer_corrections_total")
                       .Help("Container resource requests raised by /mutate (dry-run excluded)")
                       .Register(*registry_)),
      cpu_added_(prometheus::BuildCounter()
                     .Name("gpu_sizer_cpu_cores_added_total")
                     .Help("CPU cores added to requests by /mutate (dry-run excluded)")
                     .Register(*registry_)),
      memory_added_(prometheus::BuildCounter()
                        .Name("gpu_sizer_memory_bytes_added_total")
                        .Help("Memory bytes added to requests by /mutate (dry-run excluded)")
                        .Register(*registry_)),
      denials_(prometheus::BuildCounter()
                   .Name("gpu_sizer_denials_total")
                   .Help("Denials by /validate, by profile, namespace and reason (dry-run excluded)")
                   .Register(*registry_)),
      bypasses_(prometheus::BuildCounter()
                    .Name("gpu_sizer_bypasses_total")
                    .Help("Reviews that skipped sizing through a policy exemption, by reason (namespace, user, "
                          "group), namespace and endpoint (dry-run excluded)")
                    .Register(*registry_)),
      history_raises_(prometheus::BuildCounter()
                          .Name("gpu_sizer_history_raises_total")
                          .Help("Pods whose memory /mutate raised to the history rule's floor (after OOM kills of "
                                "their workload's earlier runs), by profile and namespace (dry-run excluded)")
                          .Register(*registry_)),
      policy_info_(prometheus::BuildGauge()
                       .Name("gpu_sizer_policy_info")
                       .Help("The active policy: 1, labelled with its SHA-256 and source")
                       .Register(*registry_)),
      review_slots_(review_kind_labels().size() * kOperations * 2 * 4 * 2) {
  // Sub-millisecond decisions up to the API server's 10 s timeout.
  auto& durations = prometheus::BuildHistogram()
                        .Name("gpu_sizer_review_duration_seconds")
                        .Help("Time to answer one AdmissionReview, body read to body written")
                        .Register(*registry_);
  const prometheus::Histogram::BucketBoundaries buckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                           0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  for (std::size_t e = 0; e < kEndpointNames.size(); ++e) {
    durations_[e] = &durations.Add({{"endpoint", std::string(kEndpointNames[e])}}, buckets);
  }
  pod_gpus_ = &prometheus::BuildHistogram()
                   .Name("gpu_sizer_pod_gpus")
                   .Help("GPUs per decided pod or pod template at /mutate (dry-run excluded)")
                   .Register(*registry_)
                   .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64});
  auto& reloads = prometheus::BuildCounter()
                      .Name("gpu_sizer_policy_reloads_total")
                      .Help("Policy file changes seen, by result (reloaded; rejected: the old policy stays)")
                      .Register(*registry_);
  reloads_[0] = &reloads.Add({{"result", "reloaded"}});
  reloads_[1] = &reloads.Add({{"result", "rejected"}});
  certificate_expiry_ = &prometheus::BuildGauge()
                             .Name("gpu_sizer_tls_certificate_expiry_timestamp_seconds")
                             .Help("notAfter of the served TLS certificate, in Unix seconds")
                             .Register(*registry_)
                             .Add({});
  auto& certificate_reloads =
      prometheus::BuildCounter()
          .Name("gpu_sizer_tls_certificate_reloads_total")
          .Help(
              "Certificate file changes seen, by result (reloaded; invalid, expired, not_yet_valid: the served "
              "certificate stays)")
          .Register(*registry_);
  for (std::size_t i = 0; i < kCertificateReloadResults.size(); ++i) {
    certificate_reloads_[i] = &certificate_reloads.Add({{"result", std::string(kCertificateReloadResults[i])}});
  }
  auto gauge = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_).Add({});
  };
  nodes_known_ = gauge("gpu_sizer_node_inventory_nodes", "Nodes the node watch knows (0 when it does not watch)");
  gpu_shapes_known_ =
      gauge("gpu_sizer_node_inventory_gpu_shapes", "Distinct GPU node shapes (node classes with a GPU resource) known");
  node_sync_age_ = gauge("gpu_sizer_node_inventory_sync_age_seconds",
                         "Seconds since the node watch last heard from the API server (a list or watch event)");
  auto& history_refreshes =
      prometheus::BuildCounter()
          .Name("gpu_sizer_history_refreshes_total")
          .Help("Reads of history from Prometheus, by result (ok; error: the last snapshot stays)")
          .Register(*registry_);
  history_refreshes_[0] = &history_refreshes.Add({{"result", "ok"}});
  history_refreshes_[1] = &history_refreshes.Add({{"result", "error"}});
  history_containers_ =
      gauge("gpu_sizer_history_containers", "Workload containers the history snapshot in use holds (0: none read)");
  history_read_at_ = gauge("gpu_sizer_history_read_timestamp_seconds",
                           "When the history snapshot in use was read from Prometheus, in Unix seconds (0: never)");
  node_watch_restarts_ = &prometheus::BuildCounter()
                              .Name("gpu_sizer_node_watch_restarts_total")
                              .Help("Node watches started again, by reason (timeout, gone: listed again, error)")
                              .Register(*registry_);
  dra_objects_ = &prometheus::BuildGauge()
                      .Name("gpu_sizer_dra_objects")
                      .Help(
                          "DRA objects the DRA watch knows, by kind (ResourceClaimTemplate, ResourceClaim "
                          "no pod owns, DeviceClass)")
                      .Register(*registry_);
  dra_watch_restarts_ = &prometheus::BuildCounter()
                             .Name("gpu_sizer_dra_watch_restarts_total")
                             .Help("DRA watches started again, by kind and reason (timeout, gone: listed again, error)")
                             .Register(*registry_);
  node_caps_ = &prometheus::BuildCounter()
                    .Name("gpu_sizer_node_caps_total")
                    .Help(
                        "Floors lowered to what a node the pod may run on holds, by resource, at /validate "
                        "(dry-run excluded)")
                    .Register(*registry_);
  connections_max_ = gauge("gpu_sizer_connections_max",
                           "Connections the webhook port holds at once (--max-connections); past it, new ones are "
                           "closed when accepted");
  connections_open_ = gauge("gpu_sizer_connections_open", "Connections open on the webhook port");
  connections_shed_ = &prometheus::BuildCounter()
                           .Name("gpu_sizer_connections_shed_total")
                           .Help(
                               "Connections to the webhook port closed when accepted: --max-connections were open, "
                               "each with a request answered")
                           .Register(*registry_)
                           .Add({});
  connections_evicted_ =
      &prometheus::BuildCounter()
           .Name("gpu_sizer_connections_evicted_total")
           .Help(
               "Connections to the webhook port closed to make room for a new one past --max-connections: the "
               "oldest that had no request answered")
           .Register(*registry_)
           .Add({});
  large_requests_waiting_ = gauge("gpu_sizer_large_requests_waiting",
                                  "Requests with a body over --large-body-bytes waiting for their turn (they are "
                                  "read and answered one at a time)");
  prometheus::BuildGauge()
      .Name("gpu_sizer_build_info")
      .Help("Build information: 1, labelled with the version")
      .Register(*registry_)
      .Add({{"version", version}})
      .Set(1);
}

prometheus::Counter& Metrics::review_counter(Endpoint endpoint, const ReviewOutcome& outcome) {
  const std::vector<std::string>& kinds = review_kind_labels();
  const bool malformed = outcome.decision == ReviewOutcome::Decision::kError && outcome.kind.empty();
  const auto named = std::find(kinds.begin(), kinds.end() - 2, outcome.kind);
  const std::size_t kind = malformed ? kinds.size() - 1 : static_cast<std::size_t>(named - kinds.begin());
  const std::size_t operation = index_of(kOperationNames, outcome.operation, kOperations - 1);
  const std::size_t slot = (((kind * kOperations + operation) * 2 + endpoint_index(endpoint)) * 4 +
                            static_cast<std::size_t>(outcome.decision)) *
                               2 +
                           (outcome.dry_run ? 1 : 0);
  prometheus::Counter* counter = review_slots_[slot].load(std::memory_order_acquire);
  if (counter) return *counter;
  std::lock_guard lock(mutex_);
  counter = review_slots_[slot].load(std::memory_order_relaxed);
  if (!counter) {
    counter = &reviews_.Add({{"kind", kinds[kind]},
                             {"operation", std::string(kOperationNames[operation])},
                             {"endpoint", std::string(kEndpointNames[endpoint_index(endpoint)])},
                             {"decision", std::string(to_string(outcome.decision))},
                             {"dry_run", outcome.dry_run ? "true" : "false"}});
    review_slots_[slot].store(counter, std::memory_order_release);
  }
  return *counter;
}

const std::string& Metrics::namespace_label(const std::string& ns) {
  static const std::string kOther = "other";
  static const std::string kInvalid = "invalid";
  // A namespace Kubernetes would refuse (a forged review's, megabytes long
  // or holding control characters) is never kept: every series that holds
  // it would hold a copy until the process ends. Empty is cluster-scoped.
  if (!ns.empty() && !is_dns1123_label(ns)) return kInvalid;
  auto it = namespaces_.find(ns);
  if (it != namespaces_.end()) return *it;
  if (namespaces_.size() >= namespace_cap_) return kOther;
  return *namespaces_.insert(ns).first;
}

void Metrics::count_review(Endpoint endpoint, const ReviewOutcome& outcome, double seconds) {
  review_counter(endpoint, outcome).Increment();
  durations_[endpoint_index(endpoint)]->Observe(seconds);
  // Most pods hold no GPUs: they count above and take no lock here.
  const bool sized = std::any_of(outcome.pods.begin(), outcome.pods.end(),
                                 [](const PodDecision& pod) { return pod.gpus > 0 || !pod.denial_reasons.empty(); });
  if (outcome.dry_run || !(sized || outcome.bypass)) return;

  // Corrections, denials and bypasses are rare next to reviews (most pods
  // hold no GPUs), so one lock here costs little.
  std::lock_guard lock(mutex_);
  const std::string& ns = namespace_label(outcome.namespace_name);
  if (outcome.bypass) {
    labelled_counter(bypasses_, {{{"reason", outcome.bypass->reason},
                                  {"namespace", ns},
                                  {"endpoint", kEndpointNames[endpoint_index(endpoint)]}}})
        .Increment();
  }
  auto counter = [&](prometheus::Family<prometheus::Counter>& family, const char* extra_label,
                     const std::string& profile, std::string_view extra_value) -> prometheus::Counter& {
    return labelled_counter(family, {{{"profile", profile}, {"namespace", ns}, {extra_label, extra_value}}});
  };
  for (const PodDecision& pod : outcome.pods) {
    if (endpoint == Endpoint::kMutate && pod.gpus > 0) pod_gpus_->Observe(static_cast<double>(pod.gpus));
    for (const Raise& raise : pod.raised) {
      counter(corrections_, "resource", pod.profile, raise.resource).Increment();
      if (raise.resource == "cpu")
        counter(cpu_added_, nullptr, pod.profile, "").Increment(static_cast<double>(raise.added.milli_ceil()) / 1000.0);
      if (raise.resource == "memory") {
        counter(memory_added_, nullptr, pod.profile, "").Increment(static_cast<double>(raise.added.value_ceil()));
      }
    }
    if (pod.history_raised) counter(history_raises_, nullptr, pod.profile, "").Increment();
    for (const DenialReason reason : pod.denial_reasons)
      counter(denials_, "reason", pod.profile, to_string(reason)).Increment();
    // The validating pass sees every object as it will run, after the
    // mutating one: each cap is counted once there.
    if (endpoint == Endpoint::kValidate) {
      for (const std::string_view resource : pod.capped)
        counter(*node_caps_, "resource", pod.profile, resource).Increment();
    }
  }
}

void Metrics::set_node_inventory(std::size_t nodes, std::size_t gpu_shapes) {
  nodes_known_->Set(static_cast<double>(nodes));
  gpu_shapes_known_->Set(static_cast<double>(gpu_shapes));
}

void Metrics::set_node_sync_age(double seconds) { node_sync_age_->Set(seconds); }

void Metrics::count_node_watch_restart(std::string_view reason) {
  std::lock_guard lock(mutex_);
  labelled_counter(*node_watch_restarts_, {{{"reason", reason}, {nullptr, ""}, {nullptr, ""}}}).Increment();
}

void Metrics::set_dra_objects(std::string_view kind, std::size_t objects) {
  std::lock_guard lock(mutex_);
  dra_objects_->Add({{"kind", std::string(kind)}}).Set(static_cast<double>(objects));
}

void Metrics::count_history_refresh(bool ok) { history_refreshes_[ok ? 0 : 1]->Increment(); }

void Metrics::set_history(std::size_t containers, int64_t read_at_unix_seconds) {
  history_containers_->Set(static_cast<double>(containers));
  history_read_at_->Set(static_cast<double>(read_at_unix_seconds));
}

void Metrics::count_dra_watch_restart(std::string_view kind, std::string_view reason) {
  std::lock_guard lock(mutex_);
  labelled_counter(*dra_watch_restarts_, {{{"kind", kind}, {"reason", reason}, {nullptr, ""}}}).Increment();
}

prometheus::Counter& Metrics::labelled_counter(prometheus::Family<prometheus::Counter>& family,
                                               const CounterLabels& labels) {
  const auto found = labelled_.find(
      std::make_tuple(static_cast<const void*>(&family), labels[0].second, labels[1].second, labels[2].second));
  if (found != labelled_.end()) return *found->second;
  prometheus::Labels names;
  for (const auto& [name, value] : labels) {
    if (name) names.emplace(name, std::string(value));
  }
  prometheus::Counter& created = family.Add(names);
  labelled_.emplace(std::make_tuple(static_cast<const void*>(&family), std::string(labels[0].second),
                                    std::string(labels[1].second), std::string(labels[2].second)),
                    &created);
  return created;
}

void Metrics::set_max_connections(std::size_t max_connections) {
  connections_max_->Set(static_cast<double>(max_connections));
}

void Metrics::set_connections(const ConnectionCounts& counts) {
  connections_open_->Set(static_cast<double>(counts.open));
  large_requests_waiting_->Set(static_cast<double>(counts.waiting_lane));
  std::lock_guard lock(mutex_);
  // The transport keeps running totals; the counters get what is new.
  auto add_new = [](prometheus::Counter& counter, std::uint64_t total, std::uint64_t& counted) {
    if (total > counted) counter.Increment(static_cast<double>(total - counted));
    counted = std::max(counted, total);
  };
  add_new(*connections_shed_, counts.shed, connections_shed_counted_);
  add_new(*connections_evicted_, counts.evicted, connections_evicted_counted_);
}

void Metrics::count_reload(bool accepted) { reloads_[accepted ? 0 : 1]->Increment(); }

void Metrics::set_policy(const Policy& policy) {
  std::lock_guard lock(mutex_);
  if (policy_gauge_) policy_info_.Remove(policy_gauge_);
  policy_gauge_ = &policy_info_.Add({{"sha256", policy.sha256}, {"source", policy.source}});
  policy_gauge_->Set(1);
}

void Metrics::count_certificate_reload(std::string_view result) {
  certificate_reloads_[index_of(kCertificateReloadResults, result, 1)]->Increment();
}

void Metrics::set_certificate_expiry(int64_t unix_seconds) {
  certificate_expiry_->Set(static_cast<double>(unix_seconds));
}

std::string Metrics::render() const { return prometheus::TextSerializer().Serialize(registry_->Collect()); }

}  // namespace gpusizer
