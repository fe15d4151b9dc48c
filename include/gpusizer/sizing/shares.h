// How a phase's floor is shared among the containers that hold its GPUs:
// each by its GPUs, and under a node cap only within the room the phase
// has left on the node (Floor::most).
#pragma once

#include <string_view>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/rule.h"
#include "gpusizer/util/numbers.h"

namespace gpusizer {

// The smallest step a share is rounded to: a millicore, a MiB.
inline Quantity share_granule(std::string_view resource) {
  return resource == kCpu ? Quantity::from_milli(1) : Quantity::from_bytes(kMiB);
}

// A GPU holder's share of its phase's floor, by its GPUs, rounded up to a
// granule: the shares' sum is at least the floor.
inline Quantity holder_share(const Quantity& floor, const ContainerFacts& holder, const Phase& phase,
                             std::string_view resource) {
  return holder.gpus == phase.gpus ? floor : floor.share_ceil(holder.gpus, phase.gpus, share_granule(resource));
}

// What each holder of the phase must ask for, in phase.holders order: its
// share of the floor; under a node cap (floor.most), what it asks plus its
// part of the room left, when the shares do not fit in that room.
std::vector<Quantity> holder_needs(const Phase& phase, const Floor& floor);

}  // namespace gpusizer
