#include "gpusizer/server/node_watcher.h"

#include "gpusizer/nodes/node_reader.h"
#include "gpusizer/server/log.h"

namespace gpusizer {
namespace {

constexpr const char* kNodes = "/api/v1/nodes";
constexpr const char* kOrigin = "the cluster's nodes";

// Reads one Node into the builder; one that cannot be read is logged and skipped.
bool upsert_node(JsonView object, InventoryBuilder& builder) {
  auto node = read_node(object);
  if (!node) {
    log_event(spdlog::level::warn, "node skipped: " + node.error(),
              {{"node", string_member(object["metadata"], "name")}});
    return false;
  }
  return builder.upsert(std::move(node).value());
}

// The nodes' inventory with the launchable machines after its classes: a
// new inventory (its own id, for the candidates memo), or the nodes' when
// there are none.
std::shared_ptr<const NodeInventory> with_launchable(const std::shared_ptr<const NodeInventory>& nodes,
                                                     const std::vector<NodeClass>& machines) {
  if (machines.empty()) return nodes;
  auto both = std::make_shared<NodeInventory>(*nodes);
  both->id = NodeInventory::next_id();
  both->classes.insert(both->classes.end(), machines.begin(), machines.end());
  return both;
}

}  // namespace

NodeWatcher::NodeWatcher(ApiServerConfig config, NodeWatchOptions options, Metrics* metrics)
    : gpu_resources_(options.gpu_resources),
      metrics_(metrics),
      builder_(InventorySource::kCluster, kOrigin),
      inventory_(nullptr),
      watch_(std::move(config), kNodes, "node", std::move(options), *this) {
  publish(watch_.status());
}

NodeWatcher::~NodeWatcher() { watch_.stop(); }

NodeWatchStatus NodeWatcher::status() const {
  NodeWatchStatus out;
  static_cast<WatchStatus&>(out) = watch_.status();
  std::lock_guard lock(mutex_);
  out.nodes = nodes_;
  out.gpu_shapes = gpu_shapes_;
  return out;
}

void NodeWatcher::list_started() { listing_ = std::make_unique<InventoryBuilder>(InventorySource::kCluster, kOrigin); }

void NodeWatcher::listed(JsonView item) { upsert_node(item, *listing_); }

void NodeWatcher::list_completed() {
  builder_ = std::move(*listing_);
  listing_.reset();
  log_event(spdlog::level::info, "node inventory listed", {{"nodes", builder_.size()}});
}

bool NodeWatcher::changed_by(std::string_view type, JsonView object) {
  if (type == "DELETED") return builder_.remove(string_member(object["metadata"], "name"));
  return upsert_node(object, builder_);
}

void NodeWatcher::publish(const WatchStatus& status) {
  std::string stale;
  if (status.state == WatchStatus::State::kStarting) {
    stale = "the cluster's nodes are not known yet (the first list of nodes has not completed" +
            (status.last_error.empty() ? std::string(")") : ": " + status.last_error + ")");
  } else if (status.state == WatchStatus::State::kLost) {
    stale = "the node watch lost the API server (" + status.last_error + "); nodes as of " +
            (status.last_sync ? clock_text(*status.last_sync) : std::string("the last list"));
  }
  std::shared_ptr<const NodeInventory> inventory;
  if (status.state == WatchStatus::State::kStarting) {
    auto none = std::make_shared<NodeInventory>();
    none->stale = std::move(stale);
    inventory = std::move(none);
  } else {
    inventory = builder_.build(std::move(stale));
  }
  const std::size_t shapes = inventory->gpu_shapes(gpu_resources_);
  const std::size_t nodes = inventory->node_count;
  if (metrics_) metrics_->set_node_inventory(nodes, shapes);
  {
    std::lock_guard lock(publish_mutex_);
    last_nodes_ = std::move(inventory);
    inventory_.store(with_launchable(last_nodes_, launchable_));
  }
  std::lock_guard lock(mutex_);
  nodes_ = nodes;
  gpu_shapes_ = shapes;
}

void NodeWatcher::set_launchable(std::vector<NodeClass> machines) {
  std::lock_guard lock(publish_mutex_);
  launchable_ = std::move(machines);
  if (last_nodes_) inventory_.store(with_launchable(last_nodes_, launchable_));
}

void NodeWatcher::count_restart(const char* reason) {
  if (metrics_) metrics_->count_node_watch_restart(reason);
}

}  // namespace gpusizer
