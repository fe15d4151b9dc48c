// The node watch (server/node_watcher.h) against an in-process API server
// (fake_api_server.h) made to do what a real one cannot on demand: refuse
// the first lists, page them, push chosen watch events, answer 410, 403 or
// 500, go away and come back. The inventory it publishes and the status
// /status shows are polled with a deadline, never read after a fixed sleep.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "integration/node_watch_support.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing::node_watch_test {
namespace {

using State = NodeWatchStatus::State;
using std::chrono::milliseconds;

class NodeWatch : public NodeWatchFixture {};

TEST_F(NodeWatch, BeforeTheFirstListTheNodesAreNotKnownYet) {
  api_.fail_lists(503, status_body(503, "ServiceUnavailable", "the server is currently unable to handle the request"));
  NodeWatcher watcher(api_.config(), options(), nullptr);
  EXPECT_TRUE(watcher.inventory()->classes.empty());
  EXPECT_NE(watcher.inventory()->stale.find("the cluster's nodes are not known yet"), std::string::npos);
  EXPECT_EQ(watcher.status().state, State::kStarting);
  EXPECT_EQ(watcher.status().api_server, "fake API server");
  watcher.start();

  ASSERT_TRUE(eventually([&] { return !watcher.status().last_error.empty(); }));
  const NodeWatchStatus status = watcher.status();
  EXPECT_EQ(status.state, State::kStarting);
  EXPECT_NE(status.last_error.find("503 Service Unavailable"), std::string::npos) << status.last_error;
  EXPECT_FALSE(status.last_sync.has_value());
  const auto inventory = watcher.inventory();
  EXPECT_TRUE(inventory->classes.empty());
  EXPECT_EQ(inventory->node_count, 0U);
  EXPECT_NE(inventory->stale.find("the cluster's nodes are not known yet"), std::string::npos) << inventory->stale;
  EXPECT_NE(inventory->stale.find("503"), std::string::npos) << inventory->stale;
  // It keeps trying, backing off, until a list completes.
  ASSERT_TRUE(eventually([&] { return api_.count(false) >= 3; }));
  api_.fail_lists(0);
  wait_watching(watcher, api_);
  EXPECT_EQ(watcher.inventory()->node_count, 2U);
  EXPECT_EQ(watcher.inventory()->stale, "");
  EXPECT_EQ(watcher.status().last_error, "");
}

TEST_F(NodeWatch, ListsEveryPageThenWatchesFromTheListsResourceVersion) {
  api_.set_nodes({fake_node("big-0", "a2-highgpu-8g", 96, 8), fake_node("small-0", "g2-standard-8", 8, 1),
                  fake_node("small-1", "g2-standard-8", 8, 1)},
                 "4711");
  NodeWatchOptions paged = options();
  paged.list_page_size = 2;
  auto watcher = start(api_.config(), paged);
  wait_watching(*watcher, api_);

  const auto inventory = watcher->inventory();
  EXPECT_EQ(inventory->source, InventorySource::kCluster);
  EXPECT_EQ(inventory->stale, "");
  EXPECT_EQ(inventory->node_count, 3U);
  ASSERT_EQ(inventory->classes.size(), 2U);
  EXPECT_EQ(inventory->classes[0].shape, "g2-standard-8");  // the larger class first
  EXPECT_EQ(inventory->classes[0].names, (std::vector<std::string>{"small-0", "small-1"}));
  EXPECT_EQ(inventory->classes[1].count("nvidia.com/gpu"), 8);
  const NodeWatchStatus status = watcher->status();
  EXPECT_EQ(status.state, State::kSynced);
  EXPECT_EQ(status.last_error, "");
  EXPECT_TRUE(status.last_sync.has_value());
  EXPECT_EQ(status.nodes, 3U);
  EXPECT_EQ(status.gpu_shapes, 2U);

  const auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 3U);  // two pages, then the watch
  EXPECT_EQ(requests[0].query.at("limit"), "2");
  EXPECT_EQ(requests[0].query.count("continue"), 0U);
  EXPECT_EQ(requests[1].query.at("continue"), "page-2");
  const auto& watch = requests[2].query;
  EXPECT_TRUE(requests[2].watch);
  EXPECT_EQ(watch.at("resourceVersion"), "4711");
  EXPECT_EQ(watch.at("allowWatchBookmarks"), "true");
  EXPECT_EQ(watch.at("timeoutSeconds"), "5");
}

TEST_F(NodeWatch, EventsChangeTheNextInventoryAndABookmarkMovesTheResourceVersion) {
  auto watcher = start();
  wait_watching(*watcher, api_);
  const auto listed = watcher->inventory();

  api_.push_event("ADDED", fake_node("big-0", "a2-highgpu-8g", 96, 8, "101"));
  ASSERT_TRUE(eventually([&] { return watcher->inventory()->node_count == 3; }));
  const std::optional<NodeClass> big = class_of(*watcher->inventory(), "big-0");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->shape, "a2-highgpu-8g");
  EXPECT_EQ(big->count("nvidia.com/gpu"), 8);
  EXPECT_EQ(listed->node_count, 2U);  // an inventory taken before does not change

  api_.push_event("MODIFIED", fake_node("small-1", "g2-standard-24", 24, 2, "102"));
  ASSERT_TRUE(eventually([&] {
    const std::optional<NodeClass> modified = class_of(*watcher->inventory(), "small-1");
    return modified && modified->count("nvidia.com/gpu") == 2;
  }));
  EXPECT_EQ(watcher->inventory()->classes.size(), 3U);

  api_.push_event("DELETED", fake_node("big-0", "a2-highgpu-8g", 96, 8, "103"));
  ASSERT_TRUE(eventually([&] { return watcher->inventory()->node_count == 2; }));
  EXPECT_EQ(node_names(*watcher->inventory()), (std::vector<std::string>{"small-0", "small-1"}));
  EXPECT_EQ(watcher->status().state, State::kSynced);

  // A bookmark carries only a resourceVersion; the next watch starts there.
  api_.push_event("BOOKMARK", {{"kind", "Node"}, {"metadata", {{"resourceVersion", "250"}}}});
  api_.end_watch();
  ASSERT_TRUE(eventually([&] { return api_.count(true) == 2; }));
  EXPECT_EQ(api_.last(true).query.at("resourceVersion"), "250");
  EXPECT_EQ(api_.count(false), 1U);
  EXPECT_EQ(watcher->inventory()->node_count, 2U);
  EXPECT_EQ(watcher->status().restarts, 1U);
}

TEST_F(NodeWatch, GoneListsAgainAndAWatchThatEndsResumesWithoutAList) {
  auto watcher = start();
  wait_watching(*watcher, api_);

  // The API server ends a watch at its timeoutSeconds: watch again from the
  // last resourceVersion seen, no list.
  api_.push_event("ADDED", fake_node("small-2", "g2-standard-8", 8, 1, "120"));
  api_.end_watch();
  ASSERT_TRUE(eventually([&] { return api_.count(true) == 2 && api_.streaming(); }));
  EXPECT_EQ(api_.last(true).query.at("resourceVersion"), "120");
  EXPECT_EQ(api_.count(false), 1U);
  EXPECT_EQ(watcher->inventory()->node_count, 3U);

  // An ERROR event with code 410: the resourceVersion is too old; list again
  // (the list, not the events missed, says what the nodes are now).
  api_.set_nodes({fake_node("small-0", "g2-standard-8", 8, 1)}, "300");
  api_.push_event("ERROR", nlohmann::json::parse(status_body(410, "Expired", "too old resource version: 120 (300)")));
  ASSERT_TRUE(eventually([&] { return api_.count(false) == 2 && api_.count(true) == 3; }));
  EXPECT_EQ(api_.last(true).query.at("resourceVersion"), "300");
  ASSERT_TRUE(eventually([&] { return watcher->inventory()->node_count == 1; }));
  EXPECT_EQ(watcher->status().state, State::kSynced);
  EXPECT_EQ(watcher->inventory()->stale, "");

  // A watch answered with HTTP 410 Gone lists again too.
  ASSERT_TRUE(eventually([&] { return api_.streaming(); }));
  api_.set_nodes({fake_node("small-0", "g2-standard-8", 8, 1), fake_node("small-3", "g2-standard-8", 8, 1)}, "400");
  api_.fail_watches(410, status_body(410, "Expired", "too old resource version: 300 (400)"), 1);
  api_.end_watch();
  ASSERT_TRUE(eventually([&] { return api_.count(false) == 3 && api_.count(true) == 5; }));
  EXPECT_EQ(api_.last(true).query.at("resourceVersion"), "400");
  ASSERT_TRUE(eventually([&] { return watcher->inventory()->node_count == 2; }));
  EXPECT_EQ(watcher->status().state, State::kSynced);
  EXPECT_EQ(watcher->status().restarts, 4U);  // two ends, the 410 event, the 410 answer
}

TEST_F(NodeWatch, AnApiServerAnswering500KeepsTheLastNodesAndSaysSo) {
  auto watcher = start();
  wait_watching(*watcher, api_);

  api_.fail_watches(500, status_body(500, "InternalError", "etcdserver: request timed out"));
  api_.end_watch();
  ASSERT_TRUE(eventually([&] { return watcher->status().state == State::kLost; }));
  const auto lost = watcher->inventory();
  EXPECT_EQ(lost->node_count, 2U);
  EXPECT_EQ(node_names(*lost), (std::vector<std::string>{"small-0", "small-1"}));
  EXPECT_NE(lost->stale.find("the node watch lost the API server ("), std::string::npos) << lost->stale;
  EXPECT_NE(lost->stale.find("500 Internal Server Error: etcdserver: request timed out"), std::string::npos)
      << lost->stale;
  EXPECT_NE(watcher->status().last_error.find("500 Internal Server Error"), std::string::npos);
  // It retries, backing off, from the same resourceVersion without a list.
  ASSERT_TRUE(eventually([&] { return api_.count(true) >= 4; }));
  EXPECT_EQ(api_.count(false), 1U);

  api_.fail_watches(0);
  ASSERT_TRUE(eventually([&] { return api_.streaming(); }));
  EXPECT_EQ(api_.last(true).query.at("resourceVersion"), "100");
  api_.push_event("BOOKMARK", {{"kind", "Node"}, {"metadata", {{"resourceVersion", "130"}}}});
  ASSERT_TRUE(eventually([&] { return watcher->status().state == State::kSynced; }));
  EXPECT_EQ(watcher->inventory()->stale, "");
  EXPECT_EQ(watcher->inventory()->node_count, 2U);
  EXPECT_EQ(watcher->status().last_error, "");
}

TEST_F(NodeWatch, AnApiServerThatGoesAwayAndComesBackIsWatchedAgain) {
  auto watcher = start();
  wait_watching(*watcher, api_);

  api_.stop();
  ASSERT_TRUE(eventually([&] { return watcher->status().state == State::kLost; }));
  EXPECT_EQ(watcher->inventory()->node_count, 2U);
  EXPECT_NE(watcher->inventory()->stale.find("the node watch lost the API server ("), std::string::npos)
      << watcher->inventory()->stale;
  // Connections refused while it is away.
  ASSERT_TRUE(eventually([&] { return watcher->status().last_error.find("cannot connect") != std::string::npos; }))
      << watcher->status().last_error;

  api_.start();
  ASSERT_TRUE(eventually([&] { return api_.streaming(); }));
  api_.push_event("ADDED", fake_node("small-2", "g2-standard-8", 8, 1, "140"));
  // In sync from the answer on (before the event), with the event's node soon after.
  ASSERT_TRUE(eventually([&] { return watcher->inventory()->node_count == 3; }));
  EXPECT_EQ(watcher->status().state, State::kSynced);
  EXPECT_EQ(watcher->inventory()->stale, "");
  EXPECT_EQ(api_.count(false), 1U);  // resumed from its resourceVersion, no list
}

// A watch that resumed resets the backoff: brief failures far apart never
// add up to the longest delay (9 single 500s at a 20 ms minimum take about
// a second, not the doubling's several).
TEST_F(NodeWatch, AResumedWatchResetsTheBackoff) {
  // Without the reset the waits double from 20 ms: 41 s over 11 failures.
  // With it each is 20 ms, and the round trips take the rest: about 2.5 s,
  // or about 10 s in a TSan build, which runs everything several times
  // slower. The bound sits far from both: a 3 s bound failed on a loaded
  // 2-core machine (a sanitizer build beside the tests).
  NodeWatchOptions growing = options();
  growing.backoff_max = std::chrono::seconds(60);
  auto watcher = start(api_.config(), growing);
  wait_watching(*watcher, api_);
  const auto before = std::chrono::steady_clock::now();
  for (int failure = 0; failure < 11; ++failure) {
    const std::size_t watches = api_.count(true);
    api_.fail_watches(500, status_body(500, "InternalError", "etcdserver: leader changed"), 1);
    api_.end_watch();
    ASSERT_TRUE(eventually([&] { return api_.count(true) == watches + 2 && api_.streaming(); }));
    api_.push_event("BOOKMARK", {{"kind", "Node"}, {"metadata", {{"resourceVersion", std::to_string(200 + failure)}}}});
    ASSERT_TRUE(eventually([&] { return watcher->status().state == State::kSynced; }));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(kSanitized ? 25 : 15));
}

TEST_F(NodeWatch, TheTokenFileIsReadAgainForEveryConnection) {
  const std::string token_file = dir_.path() + "/token";
  std::ofstream(token_file) << "first-token\n";
  ApiServerConfig config = api_.config();
  config.token_file = token_file;
  auto watcher = start(config, options());
  wait_watching(*watcher, api_);
  EXPECT_EQ(api_.last(false).authorization, "Bearer first-token");
  EXPECT_EQ(api_.last(true).authorization, "Bearer first-token");

  // The kubelet rewrites a projected token before it expires.
  std::ofstream(token_file + ".tmp") << "second-token\n";
  std::filesystem::rename(token_file + ".tmp", token_file);
  api_.end_watch();
  ASSERT_TRUE(eventually([&] { return api_.count(true) == 2; }));
  EXPECT_EQ(api_.last(true).authorization, "Bearer second-token");
}

TEST_F(NodeWatch, ATokenGivenOnceIsSentAsIs) {
  ApiServerConfig config = api_.config();
  config.token = "kubeconfig-token";
  auto watcher = start(config, options());
  wait_watching(*watcher, api_);
  EXPECT_EQ(api_.last(false).authorization, "Bearer kubeconfig-token");
  EXPECT_EQ(api_.last(true).authorization, "Bearer kubeconfig-token");
}

const char* const kForbidden =
    R"(nodes is forbidden: User "system:serviceaccount:gpu-sizer:gpu-sizer" cannot list resource "nodes")";

TEST_F(NodeWatch, AForbiddenListSaysSoInTheLastError) {
  api_.fail_lists(403, status_body(403, "Forbidden", kForbidden));
  auto watcher = start();
  ASSERT_TRUE(eventually([&] { return !watcher->status().last_error.empty(); }));
  const NodeWatchStatus status = watcher->status();
  EXPECT_EQ(status.state, State::kStarting);
  EXPECT_NE(status.last_error.find("403 Forbidden: nodes is forbidden: User "), std::string::npos) << status.last_error;
  EXPECT_NE(watcher->inventory()->stale.find("403 Forbidden"), std::string::npos) << watcher->inventory()->stale;
}

// The API server's Status message is shown whole, its escaped quotes
// unescaped.
TEST_F(NodeWatch, AForbiddenListShowsTheWholeStatusMessage) {
  api_.fail_lists(403, status_body(403, "Forbidden", kForbidden));
  auto watcher = start();
  ASSERT_TRUE(eventually([&] { return !watcher->status().last_error.empty(); }));
  EXPECT_EQ(watcher->status().last_error, std::string("GET /api/v1/nodes?limit=500: 403 Forbidden: ") + kForbidden);
}

TEST_F(NodeWatch, StopReturnsPromptlyWhileAWatchIsStreaming) {
  auto watcher = start();
  wait_watching(*watcher, api_);
  const auto before = std::chrono::steady_clock::now();
  watcher->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(2));
  watcher->stop();                        // idempotent
  EXPECT_EQ(api_.requests().size(), 2U);  // the list and the watch, nothing after the stop
}

// A stop() that lands after the watch's connection is set up and before
// its request is sent finds no socket to shut: the watcher stops the client
// again until its thread is done, rather than wait out the watch (35 s here).
TEST_F(NodeWatch, StopIsNotMissedBetweenAConnectionAndItsRequest) {
  std::atomic<int> sends{0};
  std::atomic<bool> in_window{false};
  NodeWatchOptions hooked = options();
  hooked.before_send = [&] {
    if (++sends != 2) return;  // the first watch, after the list
    in_window = true;
    std::this_thread::sleep_for(milliseconds(300));
  };
  auto watcher = start(api_.config(), hooked);
  ASSERT_TRUE(eventually([&] { return in_window.load(); }));
  const auto before = std::chrono::steady_clock::now();
  watcher->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(3));
  EXPECT_EQ(sends.load(), 2);
}

TEST_F(NodeWatch, StopReturnsPromptlyWhileBackingOff) {
  api_.fail_lists(503);
  NodeWatchOptions slow = options();
  slow.backoff_min = std::chrono::minutes(1);
  slow.backoff_max = std::chrono::minutes(5);
  auto watcher = start(api_.config(), slow);
  ASSERT_TRUE(eventually([&] { return !watcher->status().last_error.empty(); }));
  const auto before = std::chrono::steady_clock::now();
  watcher->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(2));
  EXPECT_EQ(api_.count(false), 1U);
}

}  // namespace
}  // namespace gpusizer::testing::node_watch_test
