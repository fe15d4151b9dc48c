#include "gpusizer/server/claim_watcher.h"

#include "gpusizer/nodes/claim_reader.h"
#include "gpusizer/server/log.h"

namespace gpusizer {
namespace {

constexpr std::array<DraKind, 4> kKinds = {DraKind::kClaimTemplate, DraKind::kClaim, DraKind::kDeviceClass,
                                           DraKind::kResourceSlice};

// Each kind's collection, served by the API server from 1.34 (DRA GA).
const char* collection(DraKind kind) {
  switch (kind) {
    case DraKind::kClaimTemplate: return "/apis/resource.k8s.io/v1/resourceclaimtemplates";
    case DraKind::kClaim: return "/apis/resource.k8s.io/v1/resourceclaims";
    case DraKind::kDeviceClass: return "/apis/resource.k8s.io/v1/deviceclasses";
    case DraKind::kResourceSlice: return "/apis/resource.k8s.io/v1/resourceslices";
  }
  return "";
}

// One object as read; nullopt for one that is not kept (a pod's own claim)
// or cannot be read (logged).
std::optional<DraObject> read_dra_object_logged(JsonView object) {
  auto read = read_dra_object(object);
  if (!read) {
    log_event(spdlog::level::warn, "DRA object skipped: " + read.error(),
              {{"kind", string_member(object, "kind")},
               {"namespace", string_member(object["metadata"], "namespace")},
               {"name", string_member(object["metadata"], "name")}});
    return std::nullopt;
  }
  return std::move(read).value();
}

}  // namespace

ClaimWatcher::ClaimWatcher(const ApiServerConfig& config, const ListWatchOptions& options, Metrics* metrics)
    : metrics_(metrics),
      builder_("the cluster's DRA objects"),
      inventory_(nullptr),
      sinks_{KindSink(*this, kKinds[0]), KindSink(*this, kKinds[1]), KindSink(*this, kKinds[2]),
             KindSink(*this, kKinds[3])} {
  for (std::size_t i = 0; i < kKinds.size(); ++i) {
    watches_[i] = std::make_unique<ListWatch>(config, collection(kKinds[i]), std::string(to_string(kKinds[i])), options,
                                              sinks_[i]);
  }
  std::lock_guard lock(mutex_);
  publish_locked();
}

ClaimWatcher::~ClaimWatcher() { stop(); }

void ClaimWatcher::start() {
  for (auto& watch : watches_) watch->start();
}

void ClaimWatcher::stop() {
  for (auto& watch : watches_) watch->stop();
}

std::vector<DraWatchStatus> ClaimWatcher::status() const {
  std::vector<DraWatchStatus> out;
  for (std::size_t i = 0; i < kKinds.size(); ++i) {
    DraWatchStatus kind;
    static_cast<WatchStatus&>(kind) = watches_[i]->status();
    kind.kind = kKinds[i];
    {
      std::lock_guard lock(mutex_);
      kind.objects = builder_.count(kKinds[i]);
    }
    out.push_back(std::move(kind));
  }
  return out;
}

void ClaimWatcher::publish_locked() {
  std::string stale;
  for (std::size_t i = 0; i < kKinds.size(); ++i) {
    if (states_[i] == WatchStatus::State::kSynced) continue;
    stale += std::string(stale.empty() ? "" : ", ") + std::string(plural(kKinds[i])) + " " +
             (states_[i] == WatchStatus::State::kStarting ? "not listed yet" : "lost");
  }
  inventory_.store(builder_.build(std::move(stale)));
  if (!metrics_) return;
  for (const DraKind kind : kKinds) metrics_->set_dra_objects(to_string(kind), builder_.count(kind));
}

void ClaimWatcher::KindSink::listed(JsonView item) {
  if (auto read = read_dra_object_logged(item)) listing_.push_back(std::move(*read));
}

void ClaimWatcher::KindSink::list_completed() {
  std::lock_guard lock(owner_.mutex_);
  owner_.builder_.clear(kind_);
  for (DraObject& object : listing_) owner_.builder_.upsert(std::move(object));
  listing_.clear();
}

bool ClaimWatcher::KindSink::changed_by(std::string_view type, JsonView object) {
  std::lock_guard lock(owner_.mutex_);
  if (type == "DELETED") {
    const JsonView metadata = object["metadata"];
    std::string namespace_name = string_member(metadata, "namespace");
    if (kind_ != DraKind::kDeviceClass && namespace_name.empty()) namespace_name = "default";
    return owner_.builder_.remove(kind_, namespace_name, string_member(metadata, "name"));
  }
  auto read = read_dra_object_logged(object);
  if (!read) return false;
  owner_.builder_.upsert(std::move(*read));
  return true;
}

void ClaimWatcher::KindSink::publish(const WatchStatus& status) {
  std::lock_guard lock(owner_.mutex_);
  owner_.states_[static_cast<std::size_t>(kind_)] = status.state;
  owner_.publish_locked();
}

void ClaimWatcher::KindSink::count_restart(const char* reason) {
  if (owner_.metrics_) owner_.metrics_->count_dra_watch_restart(to_string(kind_), reason);
}

}  // namespace gpusizer
