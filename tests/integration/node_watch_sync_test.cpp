// When the node watch counts as in sync (server/node_watcher.h), against the
// in-process API server (fake_api_server.h): a watch the API server answers
// 200 after a loss is a sync even if no event comes (an idle cluster sends
// none); a watch ended at once without an event is a failure, backed off,
// and no sync; an event that leaves every node in its class is a sync that
// publishes no new inventory; a malformed node is skipped.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/node_watch_support.h"

namespace gpusizer::testing::node_watch_sync_test {
namespace {

using State = NodeWatchStatus::State;
using std::chrono::milliseconds;

class NodeWatchSync : public NodeWatchFixture {
 protected:
  // Makes the watch open now fail with a 500, and waits until it is lost.
  void lose(const NodeWatcher& watcher) {
    api_.fail_watches(500, status_body(500, "InternalError", "etcdserver: request timed out"));
    api_.end_watch();
    ASSERT_TRUE(eventually([&] { return watcher.status().state == State::kLost; }));
    ASSERT_NE(watcher.inventory()->stale, "");
  }
};

TEST_F(NodeWatchSync, AWatchAnsweredAfterALossIsInSyncWithoutAnEvent) {
  auto watcher = start();
  wait_watching(*watcher, api_);
  lose(*watcher);

  // The API server is back and no node changes: the watch is answered 200
  // and then nothing comes for minutes.
  api_.fail_watches(0);
  ASSERT_TRUE(eventually([&] { return watcher->status().state == State::kSynced; }, milliseconds(3000)))
      << "state " << to_string(watcher->status().state) << ", last error: " << watcher->status().last_error;
  EXPECT_TRUE(api_.streaming());
  EXPECT_EQ(watcher->inventory()->stale, "");
  EXPECT_EQ(watcher->inventory()->node_count, 2U);
  EXPECT_EQ(watcher->status().last_error, "");
  EXPECT_LT(watcher->seconds_since_sync(), 3.0);
  EXPECT_EQ(api_.count(false), 1U);  // resumed, no list
}

// An API server back from a loss may answer the watch 200 and then refuse
// its resourceVersion with a 410 event: that was no sync, so while the
// watcher backs off before listing again it still reads lost.
TEST_F(NodeWatchSync, AWatchAnsweredAndRefusedAtOnceIsNoSync) {
  NodeWatchOptions slower = options();
  slower.backoff_min = milliseconds(1000);  // each backoff at least 500 ms
  slower.backoff_max = milliseconds(2000);
  auto watcher = start(api_.config(), slower);
  wait_watching(*watcher, api_);
  lose(*watcher);
  const std::string lost_error = watcher->status().last_error;

  api_.fail_lists(500, status_body(500, "InternalError", "etcdserver: leader changed"));
  api_.push_event("ERROR", nlohmann::json::parse(status_body(410, "Expired", "too old resource version: 100 (300)")));
  api_.fail_watches(0);
  // Every watch the server saw has ended in a restart once the one that
  // took the 410 has: the watcher now backs off before listing again.
  ASSERT_TRUE(eventually([&] { return api_.pending_lines() == 0 && watcher->status().restarts == api_.count(true); }));
  EXPECT_EQ(watcher->status().state, State::kLost) << "while backing off after a 410";
  EXPECT_EQ(api_.count(false), 1U) << "listed again before the check: the backoff was too short to test";
  EXPECT_EQ(watcher->status().last_error, lost_error);
  EXPECT_NE(watcher->inventory()->stale, "");
  EXPECT_GT(watcher->seconds_since_sync(), 0.1);

  api_.fail_lists(0);
  EXPECT_TRUE(eventually([&] { return watcher->status().state == State::kSynced && api_.count(false) >= 2; }));
}

// A watch that ends normally after the API server came back is in sync
// again: state, last error and the inventory's stale text clear.
TEST_F(NodeWatchSync, AWatchThatEndsCleanlyAfterALossClearsStale) {
  auto watcher = start();
  wait_watching(*watcher, api_);
  api_.stop();
  ASSERT_TRUE(eventually([&] { return watcher->status().state == State::kLost; }));

  api_.start();
  ASSERT_TRUE(eventually([&] { return api_.streaming(); }));
  const std::size_t watches = api_.count(true);
  api_.end_watch();  // the API server is back and nothing changed
  ASSERT_TRUE(eventually([&] { return api_.count(true) > watches && api_.streaming(); }));
  EXPECT_TRUE(eventually([&] { return watcher->status().state == State::kSynced; }, milliseconds(2000)))
      << "state " << to_string(watcher->status().state) << ", last error: " << watcher->status().last_error;
  EXPECT_EQ(watcher->inventory()->stale, "");
}

// A proxy (or a failing API server) that answers every watch 200 and ends
// it at once: each such watch is a failure backed off like any other, not
// a timeout to resume from in a tight loop, and the nodes age from the last
// real sync.
TEST_F(NodeWatchSync, AWatchEndedAtOnceWithoutAnEventIsAFailureBackedOff) {
  NodeWatchOptions slower = options();
  slower.shortest_watch = NodeWatchOptions{}.shortest_watch;  // 1 s
  slower.backoff_min = milliseconds(100);
  slower.backoff_max = milliseconds(200);
  auto watcher = start(api_.config(), slower);
  wait_watching(*watcher, api_);

  api_.fail_watches(200);  // an empty 200: no event, the stream ends
  api_.end_watch();
  ASSERT_TRUE(eventually([&] { return watcher->status().state == State::kLost; }));
  EXPECT_NE(watcher->status().last_error.find("without an event"), std::string::npos) << watcher->status().last_error;
  EXPECT_NE(watcher->inventory()->stale.find("the node watch lost the API server (the watch ended after "),
            std::string::npos)
      << watcher->inventory()->stale;

  // Five more, backed off 50-100 ms, then 100-200 ms each: at least 450 ms
  // (a tight loop takes a few ms a watch).
  const auto before = std::chrono::steady_clock::now();
  const std::size_t watches = api_.count(true);
  ASSERT_TRUE(eventually([&] { return api_.count(true) >= watches + 5; }));
  EXPECT_GE(std::chrono::steady_clock::now() - before, milliseconds(400));
  EXPECT_TRUE(eventually([&] { return watcher->seconds_since_sync() > 0.5; }, milliseconds(3000)))
      << "each watch opened and ended reset the sync age: " << watcher->seconds_since_sync() << " s";
  EXPECT_EQ(api_.count(false), 1U);
  EXPECT_GE(watcher->status().restarts, 5U);

  // A watch that stays open is in sync again.
  api_.fail_watches(0);
  ASSERT_TRUE(eventually([&] { return watcher->status().state == State::kSynced && api_.streaming(); }));
  EXPECT_EQ(watcher->inventory()->stale, "");
}

// Most MODIFIED events are a kubelet's heartbeat (conditions, a new
// resourceVersion): a sync, but the same classes, so the same inventory
// (a new one would cost every decision its candidates memo).
TEST_F(NodeWatchSync, AHeartbeatIsASyncThatPublishesNoNewInventory) {
  auto watcher = start();
  wait_watching(*watcher, api_);
  // Nothing happens after the watch opened: its sync ages.
  ASSERT_TRUE(eventually([&] { return watcher->seconds_since_sync() > 0.3; }));
  const auto listed = watcher->inventory();

  nlohmann::json heartbeat = fake_node("small-0", "g2-standard-8", 8, 1, "150");
  heartbeat["status"]["conditions"] = {
      {{"type", "Ready"}, {"status", "True"}, {"lastHeartbeatTime", "2025-06-01T12:00:00Z"}}};
  api_.push_event("MODIFIED", heartbeat);
  ASSERT_TRUE(eventually([&] { return watcher->seconds_since_sync() < 0.3; }));
  // The next watch starts from the heartbeat's resourceVersion: it was applied.
  api_.end_watch();
  ASSERT_TRUE(
      eventually([&] { return api_.count(true) == 2 && api_.last(true).query.at("resourceVersion") == "150"; }));
  EXPECT_EQ(watcher->inventory(), listed);
  EXPECT_EQ(watcher->inventory()->id, listed->id);

  // A change of class is published.
  api_.push_event("MODIFIED", fake_node("small-0", "g2-standard-24", 24, 2, "151"));
  ASSERT_TRUE(eventually([&] {
    const std::optional<NodeClass> modified = class_of(*watcher->inventory(), "small-0");
    return modified && modified->count("nvidia.com/gpu") == 2;
  }));
  EXPECT_NE(watcher->inventory()->id, listed->id);
  EXPECT_EQ(watcher->inventory()->classes.size(), 2U);
  EXPECT_EQ(watcher->inventory()->node_count, 2U);
}

// A node reporting negative allocatable memory is malformed: skipped (and
// logged), the rest listed, and an event making a node so leaves it as it was.
TEST_F(NodeWatchSync, ANodeWithNegativeAllocatableIsSkipped) {
  nlohmann::json negative = fake_node("broken-0", "g2-standard-8", 8, 1);
  negative["status"]["allocatable"]["memory"] = "-1Gi";
  api_.set_nodes({fake_node("small-0", "g2-standard-8", 8, 1), negative}, "100");
  auto watcher = start();
  wait_watching(*watcher, api_);
  EXPECT_EQ(node_names(*watcher->inventory()), (std::vector<std::string>{"small-0"}));

  nlohmann::json shrunk = fake_node("small-0", "g2-standard-8", 8, 1, "160");
  shrunk["status"]["allocatable"]["cpu"] = "-8";
  api_.push_event("MODIFIED", shrunk);
  api_.end_watch();
  ASSERT_TRUE(
      eventually([&] { return api_.count(true) == 2 && api_.last(true).query.at("resourceVersion") == "160"; }));
  const std::optional<NodeClass> kept = class_of(*watcher->inventory(), "small-0");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->cpu->to_string(), "8");
}

}  // namespace
}  // namespace gpusizer::testing::node_watch_sync_test
