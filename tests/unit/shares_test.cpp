// How a phase's floor is shared among its GPU holders (sizing/shares.h):
// by GPUs, rounded up to a granule; under a node cap, only the room the
// holders' own requests leave, in proportion to what each lacks, never
// past the cap and leaving less than one granule unused.
#include "gpusizer/sizing/shares.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/pod_facts_support.h"

namespace gpusizer::testing::shares_test {
namespace {

// A phase of these holders (their GPUs summed).
Phase phase_of(const std::vector<const ContainerFacts*>& holders) {
  Phase phase;
  phase.app = true;
  for (const ContainerFacts* c : holders) {
    phase.holders.push_back(c);
    phase.gpus += c->gpus;
  }
  return phase;
}

Floor memory_floor(const char* amount, const char* most = nullptr) {
  Floor floor;
  floor.resource = kMemory;
  floor.amount = q(amount);
  if (most) floor.most = q(most);
  return floor;
}

std::vector<std::string> texts(const std::vector<Quantity>& needs) {
  std::vector<std::string> out;
  for (const Quantity& need : needs) out.push_back(need.to_string());
  return out;
}

TEST(HolderNeeds, EachHolderSharesTheFloorByItsGpus) {
  const ContainerFacts a = gpu_container("a", 3, "1", "1Gi");
  const ContainerFacts b = gpu_container("b", 1, "1", "1Gi");
  EXPECT_EQ(texts(holder_needs(phase_of({&a, &b}), memory_floor("100Gi"))), (std::vector<std::string>{"75Gi", "25Gi"}));
}

TEST(HolderNeeds, SharesRoundUpToAMebibyteSoTheirSumHoldsTheFloor) {
  const ContainerFacts a = gpu_container("a", 1, "1", "1Gi");
  const ContainerFacts b = gpu_container("b", 1, "1", "1Gi");
  const ContainerFacts c = gpu_container("c", 1, "1", "1Gi");
  // 10Gi / 3 = 3413.33Mi each: 3414Mi, 10242Mi in all.
  EXPECT_EQ(texts(holder_needs(phase_of({&a, &b, &c}), memory_floor("10Gi"))),
            (std::vector<std::string>{"3414Mi", "3414Mi", "3414Mi"}));
}

TEST(HolderNeeds, UnderACapWhereTheSharesFitTheyAreUnchanged) {
  const ContainerFacts a = gpu_container("a", 1, "1", "10Gi");
  const ContainerFacts b = gpu_container("b", 1, "1", "10Gi");
  EXPECT_EQ(texts(holder_needs(phase_of({&a, &b}), memory_floor("40Gi", "40Gi"))),
            (std::vector<std::string>{"20Gi", "20Gi"}));
}

// One holder asks for more than its share: the other gets only the room
// left under the cap, and the phase stays at the cap.
TEST(HolderNeeds, UnderACapAHolderAboveItsShareLeavesTheOthersOnlyTheRoom) {
  const ContainerFacts big = gpu_container("big", 1, "1", "30Gi");
  const ContainerFacts small = gpu_container("small", 1, "1", "2Gi");
  EXPECT_EQ(texts(holder_needs(phase_of({&big, &small}), memory_floor("40Gi", "40Gi"))),
            (std::vector<std::string>{"30Gi", "10Gi"}));
}

// The room goes in proportion to what each lacks, in whole MiB, all of it:
// deciding the raised pod again raises nothing.
TEST(HolderNeeds, TheRoomIsSharedByWhatEachLacksAndAllOfItGiven) {
  const ContainerFacts a = gpu_container("a", 1, "1", "1Gi");   // lacks 9Gi of 10Gi
  const ContainerFacts b = gpu_container("b", 1, "1", "4Gi");   // lacks 6Gi
  const ContainerFacts c = gpu_container("c", 1, "1", "25Gi");  // above its share
  // Room: 31Gi - 30Gi asked = 1Gi, lacking 15Gi: a gets 3/5, b 2/5.
  const std::vector<Quantity> needs = holder_needs(phase_of({&a, &b, &c}), memory_floor("30Gi", "31Gi"));
  // 1Gi x 9/15 = 614.4Mi and x 6/15 = 409.6Mi; the last MiB to the larger remainder.
  EXPECT_EQ(texts(needs), (std::vector<std::string>{"1638Mi", "4506Mi", "25Gi"}));
  EXPECT_EQ(needs[0].plus(needs[1]).plus(needs[2]).to_string(), "31Gi");
}

TEST(HolderNeeds, LessThanAMebibyteOfRoomRaisesNobody) {
  const ContainerFacts a = gpu_container("a", 1, "1", "20Gi");
  const ContainerFacts b = gpu_container("b", 1, "1", "1Gi");
  const std::vector<Quantity> needs = holder_needs(phase_of({&a, &b}), memory_floor("40Gi", "21Gi"));
  EXPECT_EQ(texts(needs), (std::vector<std::string>{"20Gi", "1Gi"}));
}

TEST(HolderNeeds, CpuIsSharedInMillicores) {
  const ContainerFacts a = gpu_container("a", 1, "1", "1Gi");
  const ContainerFacts b = gpu_container("b", 1, "1", "1Gi");
  const ContainerFacts c = gpu_container("c", 1, "1", "1Gi");
  Floor floor;
  floor.resource = kCpu;
  floor.amount = q("10");
  floor.most = q("7");
  // Room 7 - 3 = 4 cores for 3 x 2.333 lacking: 1333m each, the last
  // millicore to the first largest remainder.
  EXPECT_EQ(texts(holder_needs(phase_of({&a, &b, &c}), floor)), (std::vector<std::string>{"2334m", "2333m", "2333m"}));
}

}  // namespace
}  // namespace gpusizer::testing::shares_test
