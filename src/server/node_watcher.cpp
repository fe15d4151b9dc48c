#include "gpusizer/server/node_watcher.h"

#include <algorithm>
#include <random>

#include "gpusizer/json/json_view.h"
#include "gpusizer/nodes/node_reader.h"
#include "gpusizer/server/log.h"

namespace gpusizer {
namespace {

constexpr const char* kNodes = "/api/v1/nodes";

std::string clock_text(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%H:%M:%S UTC", &utc);
  return text;
}

}  // namespace

std::string_view to_string(NodeWatchStatus::State state) {
  switch (state) {
    case NodeWatchStatus::State::kStarting: return "starting";
    case NodeWatchStatus::State::kSynced: return "synced";
    case NodeWatchStatus::State::kLost: return "lost";
  }
  return "starting";
}

NodeWatcher::NodeWatcher(ApiServerConfig config, NodeWatchOptions options, Metrics* metrics)
    : client_(std::move(config)),
      options_(std::move(options)),
      metrics_(metrics),
      builder_(InventorySource::kCluster, "the cluster's nodes"),
      inventory_(nullptr),
      last_sync_steady_(std::chrono::steady_clock::now()) {
  client_.set_before_send(options_.before_send);
  status_.api_server = client_.config().description;
  publish(NodeWatchStatus::State::kStarting, "");
}

NodeWatcher::~NodeWatcher() { stop(); }

void NodeWatcher::start() {
  thread_ = std::thread([this] {
    run();
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
    }
    wake_.notify_all();
  });
}

void NodeWatcher::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_.exchange(true)) return;
  }
  wake_.notify_all();
  // A client_.stop() that lands between a connection's set-up and its
  // request is missed (kube_client.h), and the watch would run to its
  // timeout: stop again until the thread is done.
  std::unique_lock lock(mutex_);
  while (thread_.joinable() && !finished_) {
    lock.unlock();
    client_.stop();
    lock.lock();
    wake_.wait_for(lock, std::chrono::milliseconds(10), [&] { return finished_; });
  }
  lock.unlock();
  if (thread_.joinable()) thread_.join();
}

NodeWatchStatus NodeWatcher::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

double NodeWatcher::seconds_since_sync() const {
  std::lock_guard lock(mutex_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_sync_steady_).count();
}

void NodeWatcher::run() {
  int attempt = 0;
  while (!stopping_) {
    std::string resource_version;
    if (Status listed = list(resource_version); !listed.ok()) {
      if (stopping_) return;
      log_event(spdlog::level::warn, "node list failed: " + listed.message(), {{"api_server", status_.api_server}});
      publish(status().state == NodeWatchStatus::State::kStarting ? NodeWatchStatus::State::kStarting
                                                                  : NodeWatchStatus::State::kLost,
              listed.message());
      if (!back_off(attempt)) return;
      continue;
    }
    attempt = 0;
    mark_synced();
    publish(NodeWatchStatus::State::kSynced, "");
    log_event(spdlog::level::info, "node inventory listed",
              {{"nodes", builder_.size()}, {"resource_version", resource_version}});
    // Watch from the list's resourceVersion until it is too old (410).
    while (!stopping_) {
      heard_ = false;
      const WatchEnd end = watch(resource_version);
      if (end == WatchEnd::kStopped) return;
      // A watch that delivered something was a recovery: the next failure
      // backs off from the start again.
      if (heard_) attempt = 0;
      if (end == WatchEnd::kTimeout) {
        count_restart("timeout");
        continue;
      }
      if (end == WatchEnd::kGone) {
        count_restart("gone");
        // A server that refuses even a fresh resourceVersion is not listed
        // again in a tight loop.
        if (!heard_ && !back_off(attempt)) return;
        break;
      }
      count_restart("error");
      if (!back_off(attempt)) return;
    }
  }
}

Status NodeWatcher::list(std::string& resource_version) {
  InventoryBuilder listed(InventorySource::kCluster, "the cluster's nodes");
  std::string continue_token;
  JsonReader reader;
  do {
    std::string target = std::string(kNodes) + "?limit=" + std::to_string(options_.list_page_size);
    if (!continue_token.empty()) target += "&continue=" + continue_token;
    auto body = client_.get(target, 60);
    if (!body) return body.status();
    auto page = reader.parse(body.value());
    if (!page) return Status::io_error("GET " + target + ": the answer is not JSON: " + page.error());
    const JsonView list = page.value();
    resource_version = string_member(list["metadata"], "resourceVersion");
    continue_token = string_member(list["metadata"], "continue");
    list["items"].for_each_element([&](JsonView item) {
      auto node = read_node(item);
      if (node) {
        listed.upsert(std::move(node).value());
      } else {
        log_event(spdlog::level::warn, "node skipped: " + node.error(),
                  {{"node", string_member(item["metadata"], "name")}});
      }
    });
  } while (!continue_token.empty());
  builder_ = std::move(listed);
  return {};
}

NodeWatcher::WatchEnd NodeWatcher::watch(std::string& resource_version) {
  const std::string target = std::string(kNodes) +
                             "?watch=1&allowWatchBookmarks=true&resourceVersion=" + resource_version +
                             "&timeoutSeconds=" + std::to_string(options_.watch_seconds);
  auto started = std::chrono::steady_clock::now();
  // What the watch was before the API server answered it, to go back to if
  // that answer turns out to be no sync after all.
  struct BeforeOpen {
    SyncTime sync;
    NodeWatchStatus::State state;
    std::string error;
  };
  std::optional<BeforeOpen> before_open;
  std::optional<WatchEnd> ended;
  std::string error;
  // The API server answering 200 is in sync from the resourceVersion on:
  // a cluster where no node changes sends no event for minutes, and must
  // not read as lost after a reconnect meanwhile.
  const auto on_open = [&] {
    started = std::chrono::steady_clock::now();
    const NodeWatchStatus was = status();
    before_open = BeforeOpen{mark_synced(), was.state, was.last_error};
    if (was.state != NodeWatchStatus::State::kSynced) publish(NodeWatchStatus::State::kSynced, "");
  };
  // The server sends a bookmark or an event at least every few minutes; a
  // silent connection past the watch's own timeout is a dead one.
  const Status streamed =
      client_.stream_lines(target, options_.watch_seconds + 30, on_open, [&](std::string_view line) {
        ended = apply_event(line, resource_version, error);
        heard_ = heard_ || !ended;
        return !ended && !stopping_;
      });
  // A watch taken back at once without an event (a proxy that closes
  // watches, an API server failing them) is no sync: the age goes on from
  // the last real one, and the watch is a failure to back off from, not a
  // timeout to resume from at once.
  const auto lasted = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  const bool at_once = !heard_ && lasted < options_.shortest_watch;
  if (stopping_) return WatchEnd::kStopped;
  if (ended == WatchEnd::kGone) {
    // Answered 200 and then refused with a 410 event before any node: the
    // resourceVersion was too old, so nothing was in sync; the backoff
    // before the next list reads as what the watch was before.
    if (!heard_ && before_open) {
      restore_sync(before_open->sync);
      if (before_open->state != NodeWatchStatus::State::kSynced) publish(before_open->state, before_open->error);
    }
    return WatchEnd::kGone;
  }
  // Lost, published below, in every case but a 410 answer (no on_open).
  if (at_once && before_open) restore_sync(before_open->sync);
  if (!ended) {
    if (!streamed.ok()) {
      // A watch refused with 410 (its resourceVersion too old) lists again.
      if (streamed.message().find(": 410") != std::string::npos) return WatchEnd::kGone;
      error = streamed.message();
    } else if (at_once) {
      error = "the watch ended after " + std::to_string(lasted.count()) + " ms without an event";
    } else {
      // Ended by the server after timeoutSeconds: in sync until then.
      mark_synced();
      heard_ = true;
      if (status().state != NodeWatchStatus::State::kSynced) publish(NodeWatchStatus::State::kSynced, "");
      return WatchEnd::kTimeout;
    }
  }
  log_event(spdlog::level::warn, "node watch failed: " + error, {{"api_server", status_.api_server}});
  publish(NodeWatchStatus::State::kLost, error);
  return WatchEnd::kError;
}

std::optional<NodeWatcher::WatchEnd> NodeWatcher::apply_event(std::string_view line, std::string& resource_version,
                                                              std::string& error) {
  thread_local JsonReader reader;
  auto event = reader.parse(line);
  if (!event) {
    error = "a watch event is not JSON: " + event.error();
    return WatchEnd::kError;
  }
  const std::string_view type = event.value()["type"].string();
  const JsonView object = event.value()["object"];
  if (type == "ERROR") {
    if (object["code"].text() == "410") return WatchEnd::kGone;
    error = "watch error: " + string_member(object, "message");
    return WatchEnd::kError;
  }
  const std::string version = string_member(object["metadata"], "resourceVersion");
  if (!version.empty()) resource_version = version;
  bool changed = false;
  if (type == "ADDED" || type == "MODIFIED") {
    auto node = read_node(object);
    if (!node) {
      log_event(spdlog::level::warn, "node skipped: " + node.error(),
                {{"node", string_member(object["metadata"], "name")}});
      return std::nullopt;
    }
    changed = builder_.upsert(std::move(node).value());
  } else if (type == "DELETED") {
    changed = builder_.remove(string_member(object["metadata"], "name"));
  }
  mark_synced();
  // A new inventory costs every decision its candidates memo: none for a
  // bookmark or a heartbeat, which leave every class as it was.
  if (changed || status().state != NodeWatchStatus::State::kSynced) publish(NodeWatchStatus::State::kSynced, "");
  return std::nullopt;
}

NodeWatcher::SyncTime NodeWatcher::mark_synced() {
  std::lock_guard lock(mutex_);
  SyncTime replaced{status_.last_sync, last_sync_steady_};
  status_.last_sync = std::chrono::system_clock::now();
  last_sync_steady_ = std::chrono::steady_clock::now();
  return replaced;
}

void NodeWatcher::restore_sync(const SyncTime& time) {
  std::lock_guard lock(mutex_);
  status_.last_sync = time.wall;
  last_sync_steady_ = time.steady;
}

void NodeWatcher::publish(NodeWatchStatus::State state, const std::string& error) {
  std::string stale;
  std::shared_ptr<const NodeInventory> inventory;
  {
    std::lock_guard lock(mutex_);
    if (state == NodeWatchStatus::State::kStarting) {
      stale = "the cluster's nodes are not known yet (the first list of nodes has not completed" +
              (error.empty() ? std::string(")") : ": " + error + ")");
    } else if (state == NodeWatchStatus::State::kLost) {
      stale = "the node watch lost the API server (" + error + "); nodes as of " +
              (status_.last_sync ? clock_text(*status_.last_sync) : std::string("the last list"));
    }
  }
  if (state == NodeWatchStatus::State::kStarting) {
    auto none = std::make_shared<NodeInventory>();
    none->stale = std::move(stale);
    inventory = std::move(none);
  } else {
    inventory = builder_.build(std::move(stale));
  }
  const std::size_t shapes = inventory->gpu_shapes(options_.gpu_resources);
  const std::size_t nodes = inventory->node_count;
  if (metrics_) metrics_->set_node_inventory(nodes, shapes);
  // The inventory before the state: whoever reads the state and then the
  // inventory (/status, the tests) sees this inventory or a newer one.
  inventory_.store(std::move(inventory));
  std::lock_guard lock(mutex_);
  status_.state = state;
  status_.last_error = error;
  status_.nodes = nodes;
  status_.gpu_shapes = shapes;
}

void NodeWatcher::count_restart(const char* reason) {
  {
    std::lock_guard lock(mutex_);
    ++status_.restarts;
  }
  if (metrics_) metrics_->count_node_watch_restart(reason);
}

bool NodeWatcher::back_off(int& attempt) {
  // Capped exponential backoff with jitter, so webhook replicas that lost
  // the API server together do not come back in step.
  thread_local std::mt19937 random(std::random_device{}());
  const auto ceiling =
      std::min<int64_t>(options_.backoff_max.count(), options_.backoff_min.count() << std::min(attempt, 20));
  ++attempt;
  const auto delay = std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(ceiling / 2, ceiling)(random));
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, delay, [&] { return stopping_.load(); });
}

}  // namespace gpusizer
