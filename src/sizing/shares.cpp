#include "gpusizer/sizing/shares.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "gpusizer/util/contract.h"
#include "gpusizer/util/numbers.h"

namespace gpusizer {

namespace {

// The room (in units) shared out in proportion to what each lacks, in
// whole steps, the steps left over to the largest remainders, so that
// less than one step of room is left: deciding the raised pod again
// raises nothing. Less than one step of room: none is raised.
// REQUIRES: lacking > room.
std::vector<int64_t> share_out_room(const std::vector<int64_t>& lacks, int128 lacking, int128 room, int64_t step) {
  GPU_SIZER_REQUIRE(lacking > room);
  std::vector<int64_t> raises(lacks.size(), 0);
  if (room < step) return raises;
  const int128 given = room / step * step;
  int128 left = given;
  std::vector<std::pair<int128, std::size_t>> remainders;
  for (std::size_t i = 0; i < lacks.size(); ++i) {
    const int128 quota = int128(lacks[i]) * given;  // over lacking
    raises[i] = static_cast<int64_t>(quota / lacking / step * step);
    left -= raises[i];
    remainders.emplace_back(quota - int128(raises[i]) * lacking, i);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  // What each still lacks exceeds what is left (lacking > given), so
  // the rounds end with all of it given.
  for (int128 before = -1; left > 0 && left != before;) {
    before = left;
    for (const auto& [remainder, i] : remainders) {
      const int64_t more = static_cast<int64_t>(std::min<int128>({int128(step), int128(lacks[i] - raises[i]), left}));
      raises[i] += more;
      left -= more;
      if (left == 0) break;
    }
  }
  return raises;
}

}  // namespace

std::vector<Quantity> holder_needs(const Phase& phase, const Floor& floor) {
  std::vector<Quantity> out;
  for (const ContainerFacts* holder : phase.holders)
    out.push_back(holder_share(floor.amount, *holder, phase, floor.resource));
  if (!floor.most) return out;
  const std::string_view resource = floor.resource;
  std::vector<int64_t> asked(out.size()), lacks(out.size());
  int128 asked_total = 0, lacking = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto request = phase.holders[i]->effective_request(resource);
    asked[i] = request ? std::max<int64_t>(0, resource_units(*request, resource)) : 0;
    lacks[i] = std::max<int64_t>(0, resource_units(out[i], resource) - asked[i]);
    asked_total += asked[i];
    lacking += lacks[i];
  }
  const int128 room = int128(resource_units(*floor.most, resource)) - asked_total;
  if (lacking <= room) return out;  // every share fits
  const std::vector<int64_t> raises =
      share_out_room(lacks, lacking, room, resource_units(share_granule(resource), resource));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = of_resource_units(clamp_to_int64(int128(asked[i]) + raises[i]), resource);
  }
  return out;
}

}  // namespace gpusizer
