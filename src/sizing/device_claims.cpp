#include "gpusizer/sizing/device_claims.h"

#include <atomic>

namespace gpusizer {

namespace {

std::string key_of(std::string_view namespace_name, std::string_view name) {
  std::string key(namespace_name);
  key += '/';
  key += name;
  return key;
}

}  // namespace

std::string_view to_string(DraKind kind) {
  switch (kind) {
    case DraKind::kClaimTemplate: return "ResourceClaimTemplate";
    case DraKind::kClaim: return "ResourceClaim";
    case DraKind::kDeviceClass: return "DeviceClass";
    case DraKind::kResourceSlice: return "ResourceSlice";
  }
  return "ResourceClaim";
}

std::string_view plural(DraKind kind) {
  switch (kind) {
    case DraKind::kClaimTemplate: return "ResourceClaimTemplates";
    case DraKind::kClaim: return "ResourceClaims";
    case DraKind::kDeviceClass: return "DeviceClasses";
    case DraKind::kResourceSlice: return "ResourceSlices";
  }
  return "ResourceClaims";
}

const ClaimSpec* ClaimInventory::find(std::string_view kind, std::string_view namespace_name,
                                      std::string_view name) const {
  const auto& objects = kind == to_string(DraKind::kClaimTemplate) ? templates : claims;
  const auto found = objects.find(key_of(namespace_name, name));
  return found == objects.end() ? nullptr : found->second.get();
}

void ClaimInventoryBuilder::upsert(DraObject object) {
  if (object.kind == DraKind::kDeviceClass) {
    classes_[object.name] = std::move(object.extended_resource);
    return;
  }
  if (object.kind == DraKind::kResourceSlice) {
    slices_[object.name] = std::make_shared<const DeviceSlice>(std::move(object.slice));
    return;
  }
  auto& objects = object.kind == DraKind::kClaimTemplate ? templates_ : claims_;
  objects[key_of(object.namespace_name, object.name)] = std::make_shared<const ClaimSpec>(std::move(object.spec));
}

bool ClaimInventoryBuilder::remove(DraKind kind, std::string_view namespace_name, std::string_view name) {
  if (kind == DraKind::kDeviceClass) {
    const auto found = classes_.find(name);
    if (found == classes_.end()) return false;
    classes_.erase(found);
    return true;
  }
  if (kind == DraKind::kResourceSlice) {
    const auto found = slices_.find(name);
    if (found == slices_.end()) return false;
    slices_.erase(found);
    return true;
  }
  auto& objects = kind == DraKind::kClaimTemplate ? templates_ : claims_;
  const auto found = objects.find(key_of(namespace_name, name));
  if (found == objects.end()) return false;
  objects.erase(found);
  return true;
}

void ClaimInventoryBuilder::clear(DraKind kind) {
  switch (kind) {
    case DraKind::kClaimTemplate: templates_.clear(); break;
    case DraKind::kClaim: claims_.clear(); break;
    case DraKind::kDeviceClass: classes_.clear(); break;
    case DraKind::kResourceSlice: slices_.clear(); break;
  }
}

std::size_t ClaimInventoryBuilder::count(DraKind kind) const {
  switch (kind) {
    case DraKind::kClaimTemplate: return templates_.size();
    case DraKind::kClaim: return claims_.size();
    case DraKind::kDeviceClass: return classes_.size();
    case DraKind::kResourceSlice: return slices_.size();
  }
  return 0;
}

std::shared_ptr<const ClaimInventory> ClaimInventoryBuilder::build(std::string stale) const {
  auto built = std::make_shared<ClaimInventory>();
  built->origin = origin_;
  built->stale = std::move(stale);
  built->templates = templates_;
  built->claims = claims_;
  built->device_classes = classes_.size();
  for (const auto& [name, resource] : classes_) {
    if (!resource.empty()) built->extended_resources.emplace(resource, name);
  }
  for (const auto& [name, slice] : slices_) built->node_slices[slice->node].push_back(slice);
  static std::atomic<uint64_t> last{0};
  built->id = ++last;
  return built;
}

}  // namespace gpusizer
