// What a sized pod's containers lack: for each resource of each phase, the
// holders below their share of the binding floor (and, for cpu and memory
// that the pod's spec.resources sets, the pod itself and the container
// limits below a share). The decider (pod_sizing.cpp) reports, fixes and
// explains from them.
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/rule.h"

namespace gpusizer {

// The resources in the order each container's are compared and raised.
inline constexpr std::string_view kSizedResources[] = {kCpu, kMemory, kEphemeralStorage};
inline constexpr std::size_t kSizedResourceCount = std::size(kSizedResources);

// Its place in kSizedResources. REQUIRES: it is one of them.
std::size_t sized_resource_index(std::string_view resource);

// Per phase, per resource (kSizedResources order), the binding floor; nullptr: none.
using BindingFloors = std::vector<std::array<const Floor*, kSizedResourceCount>>;

// One resource of one container below what its share of its phase needs.
struct Shortfall {
  const ContainerFacts* container;  // or the pod's spec.resources (PodFacts::pod_level)
  const Phase* phase;
  const Floor* floor;               // the binding floor it falls short of
  Quantity need;                    // the container's share of it
  std::optional<Quantity> request;  // effective: the request or the limit it defaults to
  std::optional<Quantity> limit;
  // The pod's spec.resources holds the request (pod-level resources): only
  // a container limit below its share is raised, as its own cgroup's.
  bool limit_only = false;
};

class Shortfalls {
 public:
  // Each holder's share of its phase's binding floors; rounding up keeps
  // the shares' sum at or above the floor. Under a node cap the phase may
  // have at most the cap in all: its holders share out only the room left
  // by what they already ask, so the phase never passes it.
  // REQUIRES: pod and phases outlive this; binding has one entry per phase.
  void find(const PodFacts& pod, const PodPhases& phases, const BindingFloors& binding);

  // In the order found: holder by holder, each one's resources together.
  const std::vector<Shortfall>& all() const { return shortfalls_; }
  // The container's shortfall of a resource, or nullptr.
  const Shortfall* of(const ContainerFacts& c, std::string_view resource) const;
  // What a container asks for once sized: its effective request, or the
  // need gpu-sizer raises it to (in every mode: checks judge the pod as it
  // must run, not as written).
  std::optional<Quantity> sized_request(const ContainerFacts& c, std::string_view resource) const;

 private:
  // Per container, its share of a resource that the pod's spec.resources holds.
  using PodLevelShares = std::unordered_map<const ContainerFacts*, Quantity>;

  void find_pod_level(const PodFacts& pod, const PodPhases& phases, const BindingFloors& binding,
                      std::string_view resource, const PodLevelShares& shares);

  std::vector<Shortfall> shortfalls_;
  // Per container, its shortfall of each resource (kSizedResources order):
  // what one container needs is found without a walk over every
  // container's (pods have tens of thousands). A container holds GPUs in
  // one phase, which has one binding floor per resource: one shortfall at
  // most per slot. Points into shortfalls_.
  // Sorted by container, found by binary search: one allocation per pod.
  struct ContainerShortfalls {
    const ContainerFacts* container = nullptr;
    std::array<const Shortfall*, kSizedResourceCount> by_resource{};
  };
  static bool by_container(const ContainerShortfalls& a, const ContainerShortfalls& b);
  std::vector<ContainerShortfalls> of_;
};

}  // namespace gpusizer
