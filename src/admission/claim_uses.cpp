#include "gpusizer/admission/claim_uses.h"

#include <algorithm>

#include "gpusizer/sizing/accelerator_asks.h"

namespace gpusizer {

void ClaimUses::read(JsonView claims, ContainerFacts& container, const std::string& resources_field, bool shared,
                     std::vector<ClaimUse>& out) {
  if (!sources_) {
    // By name, once per pod: a pod may have thousands of both.
    sources_.emplace();
    pod_claims_.for_each_element([&](JsonView claim) {
      for (const auto& [key, kind] : {std::pair{"resourceClaimTemplateName", "ResourceClaimTemplate"},
                                      std::pair{"resourceClaimName", "ResourceClaim"}}) {
        const std::string_view name = claim[key].string();
        if (!name.empty()) sources_->emplace(claim["name"].string(), std::pair{kind, name});
      }
    });
  }
  int index = 0;
  claims.for_each_element([&](JsonView use) {
    ClaimUse read{container.name, resources_field + ".claims[" + std::to_string(index++) + "]",
                  std::string(use["name"].string()), std::string(use["request"].string())};
    if (const auto found = sources_->find(read.claim); found != sources_->end()) {
      read.source_kind = found->second.first;
      read.source = found->second.second;
    }
    resolve(read, container, shared);
    out.push_back(std::move(read));
  });
}

// Reads the use's asks from its claim, when known, and adds their GPUs to
// the container.
void ClaimUses::resolve(ClaimUse& use, ContainerFacts& container, bool shared) {
  const ClaimSpec* spec =
      known_ && !use.source_kind.empty() ? known_->find(use.source_kind, namespace_name_, use.source) : nullptr;
  if (!spec) return;
  use.known = true;
  use.asks = claim_asks(policy_, *spec, use.request);
  const int64_t gpus = claim_gpus(use.asks);
  if (gpus == 0 || (shared && !counted_.insert(use.claim + '/' + use.request).second)) return;
  use.gpus = std::min(gpus, kMaxGpusPerContainer);
  container.gpus += use.gpus;
  container.claim_gpus += use.gpus;
}

}  // namespace gpusizer
