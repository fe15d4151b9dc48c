#include "gpusizer/server/large_request_lane.h"

#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace gpusizer::large_request_lane_test {
namespace {

TEST(LargeRequestLane, WaitersGetTheLaneOneAtATimeInTheOrderTheyCame) {
  LargeRequestLane lane;
  std::vector<std::string> order;
  auto waiter = [&](const std::string& name) {
    return [&order, name] {
      order.push_back(name);
      return true;
    };
  };
  lane.enter(waiter("first"));  // free: runs now
  lane.enter(waiter("second"));
  lane.enter(waiter("third"));
  EXPECT_EQ(order, std::vector<std::string>({"first"}));
  EXPECT_EQ(lane.waiting(), 2u);
  lane.leave();
  EXPECT_EQ(order, std::vector<std::string>({"first", "second"}));
  lane.leave();
  lane.leave();
  EXPECT_EQ(order, std::vector<std::string>({"first", "second", "third"}));
  EXPECT_EQ(lane.waiting(), 0u);
  lane.enter(waiter("fourth"));  // free again
  EXPECT_EQ(order.back(), "fourth");
  lane.leave();
}

TEST(LargeRequestLane, AWaiterThatHasGoneIsPassedOver) {
  LargeRequestLane lane;
  std::vector<std::string> order;
  lane.enter([] { return true; });
  lane.enter([&] {
    order.push_back("gone");
    return false;  // its connection closed while it waited
  });
  lane.enter([&] {
    order.push_back("next");
    return true;
  });
  lane.leave();
  EXPECT_EQ(order, std::vector<std::string>({"gone", "next"}));
  EXPECT_EQ(lane.waiting(), 0u);
  // "next" holds it: a newcomer waits.
  bool newcomer = false;
  lane.enter([&] { return newcomer = true; });
  EXPECT_FALSE(newcomer);
  lane.leave();
  EXPECT_TRUE(newcomer);
  lane.leave();
}

TEST(LargeRequestLane, AFirstWaiterThatHasGoneLeavesTheLaneFree) {
  LargeRequestLane lane;
  lane.enter([] { return false; });
  bool entered = false;
  lane.enter([&] { return entered = true; });
  EXPECT_TRUE(entered) << "the lane stayed held by a waiter that had gone";
  lane.leave();
}

TEST(LargeRequestLane, RunsWorkOnAThreadOfItsOwn) {
  LargeRequestLane lane;
  std::promise<std::thread::id> ran_on;
  lane.run([&] { ran_on.set_value(std::this_thread::get_id()); });
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
  lane.join();
}

}  // namespace
}  // namespace gpusizer::large_request_lane_test
