#include "gpusizer/server/pool_watcher.h"

#include <nlohmann/json.hpp>

#include "gpusizer/nodes/autoscaler_reader.h"
#include "gpusizer/server/log.h"
#include "gpusizer/server/stop_thread.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

// Each kind, its API group, the versions that serve it (newest first) and
// its resource name: Karpenter's (kubernetes-sigs/karpenter pkg/apis/v1,
// aws/karpenter-provider-aws pkg/apis/v1, Azure/karpenter-provider-azure
// pkg/apis/v1beta1 and v1alpha2) and GKE's ComputeClass.
struct PoolKind {
  const char* kind;
  const char* group;
  std::array<const char*, 2> versions;
  const char* resource;
};
constexpr std::array<PoolKind, 4> kPoolKinds = {{
    {"NodePool", "karpenter.sh", {"v1", nullptr}, "nodepools"},
    {"EC2NodeClass", "karpenter.k8s.aws", {"v1", nullptr}, "ec2nodeclasses"},
    {"AKSNodeClass", "karpenter.azure.com", {"v1beta1", "v1alpha2"}, "aksnodeclasses"},
    {"ComputeClass", "cloud.google.com", {"v1", nullptr}, "computeclasses"},
}};

constexpr int kDiscoverySeconds = 10;

// The kind's collection ("/apis/karpenter.sh/v1/nodepools") when the API
// server serves it; empty when it does not (no CRD: 404, or a version
// without the resource); a failure for anything else (403: RBAC).
Result<std::string> served_collection(ApiClient& client, const PoolKind& kind) {
  for (const char* version : kind.versions) {
    if (!version) break;
    const std::string group_version = "/apis/" + std::string(kind.group) + "/" + version;
    auto listing = client.get(group_version, kDiscoverySeconds);
    if (!listing && listing.status().code() == ProblemCode::kUnknownName) continue;
    if (!listing) return listing.status();
    const auto resources = nlohmann::json::parse(listing.value(), nullptr, false);
    if (!resources.is_object() || !resources.contains("resources") || !resources["resources"].is_array()) continue;
    for (const auto& resource : resources["resources"]) {
      if (resource.is_object() && resource.value("name", nlohmann::json()) == kind.resource) {
        return group_version + "/" + kind.resource;
      }
    }
  }
  return std::string();
}

// One object as read, under its name; nullopt for one that cannot be read (logged).
std::optional<AutoscalerObjects> read_autoscaler_object_logged(JsonView object) {
  AutoscalerObjects read;
  if (Status status = add_autoscaler_object(object, read); !status.ok()) {
    log_event(spdlog::level::warn, "autoscaler object skipped: " + status.message(),
              {{"kind", string_member(object, "kind")}, {"name", string_member(object["metadata"], "name")}});
    return std::nullopt;
  }
  return read;
}

}  // namespace

PoolWatcher::PoolWatcher(ApiServerConfig config, PoolWatchOptions options, NodeWatcher& nodes)
    : config_(std::move(config)),
      options_(std::move(options)),
      nodes_(nodes),
      discovery_client_(config_),
      sinks_{KindSink(*this, 0), KindSink(*this, 1), KindSink(*this, 2), KindSink(*this, 3)} {
  for (std::size_t i = 0; i < kKinds; ++i) {
    states_[i].kind = kPoolKinds[i].kind;
    states_[i].api_server = config_.description;
    states_[i].discovery = "not looked for yet";
  }
}

PoolWatcher::~PoolWatcher() { stop(); }

void PoolWatcher::start() {
  std::lock_guard lock(mutex_);
  if (stopping_ || discovery_.joinable()) return;
  discovery_ = std::thread([this] {
    discover();
    std::lock_guard done(mutex_);
    discovered_ = true;
    wake_.notify_all();
  });
}

void PoolWatcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  stop_until_finished(mutex_, wake_, discovered_, discovery_, [this] { discovery_client_.stop(); });
  // No watch is made any more.
  for (auto& watch : watches_) {
    if (watch) watch->stop();
  }
}

void PoolWatcher::discover() {
  while (true) {
    bool all_found = true;
    for (std::size_t i = 0; i < kKinds; ++i) {
      {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        if (watches_[i]) continue;
      }
      auto collection = served_collection(discovery_client_, kPoolKinds[i]);
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      if (!collection || collection.value().empty()) {
        all_found = false;
        states_[i].discovery = collection ? "not served (no CRD)" : collection.error();
        continue;
      }
      log_event(spdlog::level::info, "watching autoscaler pools",
                {{"kind", kPoolKinds[i].kind}, {"collection", collection.value()}});
      states_[i].collection = collection.value();
      states_[i].discovery.clear();
      watches_[i] =
          std::make_unique<ListWatch>(config_, collection.value(), lowercase(kPoolKinds[i].kind), options_, sinks_[i]);
      watches_[i]->start();
    }
    if (all_found) return;
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, options_.rediscover, [&] { return stopping_; })) return;
  }
}

std::vector<PoolWatchStatus> PoolWatcher::status() const {
  std::lock_guard lock(mutex_);
  std::vector<PoolWatchStatus> out;
  for (std::size_t i = 0; i < kKinds; ++i) {
    PoolWatchStatus kind = states_[i];
    if (watches_[i]) static_cast<WatchStatus&>(kind) = watches_[i]->status();
    kind.objects = objects_[i].size();
    out.push_back(std::move(kind));
  }
  return out;
}

std::size_t PoolWatcher::launchable() const {
  std::lock_guard lock(mutex_);
  return launchable_;
}

void PoolWatcher::publish_locked() {
  AutoscalerObjects all;
  for (const auto& kind : objects_) {
    for (const auto& [name, objects] : kind) {
      all.pools.insert(all.pools.end(), objects.pools.begin(), objects.pools.end());
      all.node_classes.insert(objects.node_classes.begin(), objects.node_classes.end());
    }
  }
  bool more = false;
  std::vector<NodeClass> machines = launchable_machines(all, &more);
  if (more && !truncated_) {
    log_event(spdlog::level::warn, "autoscaler pools may launch more machines than are kept",
              {{"kept", machines.size()}, {"pools", all.pools.size()}});
  }
  truncated_ = more;
  launchable_ = machines.size();
  nodes_.set_launchable(std::move(machines));
}

void PoolWatcher::KindSink::listed(JsonView item) {
  if (auto read = read_autoscaler_object_logged(item))
    listing_[string_member(item["metadata"], "name")] = std::move(*read);
}

void PoolWatcher::KindSink::list_completed() {
  std::lock_guard lock(owner_.mutex_);
  owner_.objects_[kind_] = std::move(listing_);
  listing_.clear();
  owner_.publish_locked();
}

bool PoolWatcher::KindSink::changed_by(std::string_view type, JsonView object) {
  const std::string name = string_member(object["metadata"], "name");
  std::lock_guard lock(owner_.mutex_);
  if (type == "DELETED") {
    owner_.objects_[kind_].erase(name);
  } else if (auto read = read_autoscaler_object_logged(object)) {
    owner_.objects_[kind_][name] = std::move(*read);
  } else {
    return false;
  }
  owner_.publish_locked();
  return true;
}

void PoolWatcher::KindSink::publish(const WatchStatus& /*status*/) {
  // What decisions see changes with the objects (list_completed,
  // changed_by); the watch's state is read by status().
}

}  // namespace gpusizer
