// What the node watch tests share: a watcher against a FakeApiServer with
// quick retries, and ways to look into the inventories it publishes.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/server/node_watcher.h"
#include "integration/fake_api_server.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing {

// Every node of an inventory, sorted.
inline std::vector<std::string> node_names(const NodeInventory& inventory) {
  std::vector<std::string> names;
  for (const NodeClass& c : inventory.classes) names.insert(names.end(), c.names.begin(), c.names.end());
  std::sort(names.begin(), names.end());
  return names;
}

// A copy of the class holding the node, if any: a copy, because the watcher
// may replace (and free) the inventory it came from at any moment.
inline std::optional<NodeClass> class_of(const NodeInventory& inventory, const std::string& node) {
  for (const NodeClass& c : inventory.classes) {
    if (std::find(c.names.begin(), c.names.end(), node) != c.names.end()) return c;
  }
  return std::nullopt;
}

// A Kubernetes Status object, as the API server answers a failure with.
inline std::string status_body(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                        {"message", message}, {"reason", reason},   {"code", code}}
      .dump();
}

// Two 1-GPU nodes at resourceVersion 100, and a watcher of them started on demand.
class NodeWatchFixture : public ::testing::Test {
 protected:
  NodeWatchFixture() {
    api_.set_nodes({fake_node("small-0", "g2-standard-8", 8, 1), fake_node("small-1", "g2-standard-8", 8, 1)}, "100");
  }

  // Small backoff and watch timeout, so every retry is quick. A watch the
  // test ends (FakeApiServer::end_watch) stands for one the API server
  // ended at its timeoutSeconds, however soon: no watch is too short.
  static NodeWatchOptions options() {
    NodeWatchOptions options;
    options.backoff_min = std::chrono::milliseconds(20);
    options.backoff_max = std::chrono::milliseconds(100);
    options.watch_seconds = 5;
    options.shortest_watch = std::chrono::milliseconds(0);
    options.gpu_resources = {"nvidia.com/gpu"};
    return options;
  }

  std::unique_ptr<NodeWatcher> start(ApiServerConfig config, NodeWatchOptions options) {
    auto watcher = std::make_unique<NodeWatcher>(std::move(config), std::move(options), nullptr);
    watcher->start();
    return watcher;
  }
  std::unique_ptr<NodeWatcher> start() { return start(api_.config(), options()); }

  // Waits until the watcher has listed and a watch of it is open.
  static void wait_watching(const NodeWatcher& watcher, const FakeApiServer& api) {
    ASSERT_TRUE(eventually([&] {
      return watcher.status().state == NodeWatchStatus::State::kSynced && api.streaming();
    })) << "state "
        << to_string(watcher.status().state) << ", last error: " << watcher.status().last_error;
  }

  TempDir dir_;
  FakeApiServer api_{dir_.path() + "/api"};
};

}  // namespace gpusizer::testing
