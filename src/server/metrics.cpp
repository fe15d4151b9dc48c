#include "gpusizer/metrics.h"

#include <prometheus/text_serializer.h>

namespace gpusizer {

namespace {
constexpr std::array<Endpoint, 2> kEndpoints = {Endpoint::kMutate, Endpoint::kValidate};
constexpr std::array<ReviewOutcome::Decision, 4> kDecisions = {
    ReviewOutcome::Decision::kAllowed, ReviewOutcome::Decision::kMutated, ReviewOutcome::Decision::kDenied,
    ReviewOutcome::Decision::kError};

std::string endpoint_name(Endpoint endpoint) { return endpoint == Endpoint::kMutate ? "mutate" : "validate"; }
}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& reviews = prometheus::BuildCounter()
                      .Name("gpu_sizer_reviews_total")
                      .Help("AdmissionReviews answered, by endpoint and decision")
                      .Register(*registry_);
  // Sub-millisecond decisions up to the API server's 10 s timeout.
  auto& durations = prometheus::BuildHistogram()
                        .Name("gpu_sizer_review_duration_seconds")
                        .Help("Time to answer one AdmissionReview, body read to body written")
                        .Register(*registry_);
  const prometheus::Histogram::BucketBoundaries buckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                           0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5,
                                                           5,      10};
  for (std::size_t e = 0; e < kEndpoints.size(); ++e) {
    const std::string endpoint = endpoint_name(kEndpoints[e]);
    for (std::size_t d = 0; d < kDecisions.size(); ++d) {
      reviews_[e][d] = &reviews.Add({{"endpoint", endpoint}, {"decision", std::string(to_string(kDecisions[d]))}});
    }
    durations_[e] = &durations.Add({{"endpoint", endpoint}}, buckets);
  }
  auto& reloads = prometheus::BuildCounter()
                      .Name("gpu_sizer_policy_reloads_total")
                      .Help("Policy file changes seen, by result (reloaded, rejected: the old policy stays)")
                      .Register(*registry_);
  reloads_[0] = &reloads.Add({{"result", "reloaded"}});
  reloads_[1] = &reloads.Add({{"result", "rejected"}});
}

void Metrics::count_review(Endpoint endpoint, ReviewOutcome::Decision decision, double seconds) {
  const std::size_t e = endpoint == Endpoint::kMutate ? 0 : 1;
  reviews_[e][static_cast<std::size_t>(decision)]->Increment();
  durations_[e]->Observe(seconds);
}

void Metrics::count_reload(PolicyStore::Reload result) {
  if (result == PolicyStore::Reload::kReloaded) reloads_[0]->Increment();
  if (result == PolicyStore::Reload::kRejected) reloads_[1]->Increment();
}

std::string Metrics::render() const { return prometheus::TextSerializer().Serialize(registry_->Collect()); }

}  // namespace gpusizer
