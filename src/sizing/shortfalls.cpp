#include "gpusizer/sizing/shortfalls.h"

#include <algorithm>
#include <functional>

#include "gpusizer/sizing/node_fit.h"
#include "gpusizer/sizing/shares.h"

namespace gpusizer {

std::size_t sized_resource_index(std::string_view resource) {
  return static_cast<std::size_t>(std::find(std::begin(kSizedResources), std::end(kSizedResources), resource) -
                                  std::begin(kSizedResources));
}

// Containers are told apart by address: std::less orders any two pointers.
bool Shortfalls::by_container(const ContainerShortfalls& a, const ContainerShortfalls& b) {
  return std::less<>()(a.container, b.container);
}

void Shortfalls::find(const PodFacts& pod, const PodPhases& phases, const BindingFloors& binding) {
  std::array<PodLevelShares, kSizedResourceCount> pod_level_shares;
  for (std::size_t p = 0; p < phases.phases.size(); ++p) {
    const Phase& phase = phases.phases[p];
    std::array<std::vector<Quantity>, kSizedResourceCount> needs;
    for (std::size_t r = 0; r < kSizedResourceCount; ++r) {
      if (const Floor* floor = binding[p][r]) needs[r] = holder_needs(phase, *floor);
    }
    // Holder by holder, so that each container's changes read together.
    for (std::size_t i = 0; i < phase.holders.size(); ++i) {
      const ContainerFacts* holder = phase.holders[i];
      for (std::size_t r = 0; r < kSizedResourceCount; ++r) {
        if (needs[r].empty() || !holder->sizes(kSizedResources[r])) continue;
        const Quantity& need = needs[r][i];
        const auto request = holder->effective_request(kSizedResources[r]);
        const auto limit = holder->limit(kSizedResources[r]);
        if (pod.sized_at_pod_level(kSizedResources[r])) {
          pod_level_shares[r].emplace(holder, need);
          if (limit && *limit < need)
            shortfalls_.push_back({holder, &phase, binding[p][r], need, request, limit, true});
          continue;
        }
        if (request && *request >= need && (!limit || *limit >= need)) continue;
        if (!request && need.is_zero()) continue;  // no room under a cap: nothing to set
        shortfalls_.push_back({holder, &phase, binding[p][r], need, request, limit});
      }
    }
  }
  for (std::size_t r = 0; r < kSizedResourceCount; ++r) {
    if (!pod_level_shares[r].empty()) find_pod_level(pod, phases, binding, kSizedResources[r], pod_level_shares[r]);
  }
  of_.reserve(shortfalls_.size());
  for (const Shortfall& s : shortfalls_) of_.push_back({s.container, {}});
  std::sort(of_.begin(), of_.end(), by_container);
  of_.erase(
      std::unique(of_.begin(), of_.end(), [](const auto& a, const auto& b) { return a.container == b.container; }),
      of_.end());
  for (const Shortfall& s : shortfalls_) {
    std::lower_bound(of_.begin(), of_.end(), ContainerShortfalls{s.container, {}}, by_container)
        ->by_resource[sized_resource_index(s.floor->resource)] = &s;
  }
}

// The pod's spec.resources below what its containers ask once each holder
// has its share: the API server refuses a pod whose request is below its
// containers' sum, and the pod's cgroup is what would run out. The
// containers' requests are left as written, so that sum never grows.
void Shortfalls::find_pod_level(const PodFacts& pod, const PodPhases& phases, const BindingFloors& binding,
                                std::string_view resource, const PodLevelShares& shares) {
  const ContainerFacts& pod_level = *pod.pod_level;
  const PodRequest sum = pod_request(pod, phases.gpus, [&](const ContainerFacts& c, std::string_view asked) {
    std::optional<Quantity> request = &c == &pod_level ? std::nullopt : c.effective_request(asked);
    const auto share = asked == resource ? shares.find(&c) : shares.end();
    if (share != shares.end() && (!request || *request < share->second)) request = share->second;
    return request;
  });
  const Quantity need = resource == kCpu ? sum.cpu : sum.memory;
  const auto request = pod_level.effective_request(resource);
  const auto limit = pod_level.limit(resource);
  if (request && *request >= need && (!limit || *limit >= need)) return;
  // The app phase's floor explains it, else the first init container's.
  for (std::size_t p = 0; p < phases.phases.size(); ++p) {
    if (const Floor* floor = binding[p][sized_resource_index(resource)]) {
      shortfalls_.push_back({&pod_level, &phases.phases[p], floor, need, request, limit});
      return;
    }
  }
}

const Shortfall* Shortfalls::of(const ContainerFacts& c, std::string_view resource) const {
  const auto found = std::lower_bound(of_.begin(), of_.end(), ContainerShortfalls{&c, {}}, by_container);
  return found == of_.end() || found->container != &c ? nullptr : found->by_resource[sized_resource_index(resource)];
}

std::optional<Quantity> Shortfalls::sized_request(const ContainerFacts& c, std::string_view resource) const {
  std::optional<Quantity> request = c.effective_request(resource);
  const Shortfall* s = of(c, resource);
  if (s && !s->limit_only && (!request || *request < s->need)) request = s->need;
  return request;
}

}  // namespace gpusizer
