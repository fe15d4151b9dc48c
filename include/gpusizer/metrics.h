// Prometheus metrics of the webhook. Metric references are created once and
// cached, so counting a review allocates nothing.
#pragma once

#include <array>
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "gpusizer/pod_decision.h"
#include "gpusizer/policy_store.h"
#include "gpusizer/review.h"

namespace gpusizer {

class Metrics {
 public:
  Metrics();

  void count_review(Endpoint endpoint, ReviewOutcome::Decision decision, double seconds);
  void count_reload(PolicyStore::Reload result);

  // The registry in Prometheus text exposition format.
  std::string render() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  // [endpoint][decision]
  std::array<std::array<prometheus::Counter*, 4>, 2> reviews_{};
  std::array<prometheus::Histogram*, 2> durations_{};
  std::array<prometheus::Counter*, 2> reloads_{};  // [reloaded, rejected]
};

}  // namespace gpusizer
