// The DRA claims a pod's containers use (their resources.claims, KEP-4381):
// each is named by the pod spec's resourceClaims entry of the same name,
// resolved against the DRA objects known, and its GPUs added to the
// container that uses it (docs/rules.md "DRA claims"). Part of reading a
// pod (admission/pod_reader.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gpusizer/json/json_view.h"
#include "gpusizer/sizing/device_claims.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// More GPUs than this in one container is a typo, not a machine; refusing
// it keeps all arithmetic far from overflow.
inline constexpr int64_t kMaxGpusPerContainer = 1 << 20;

class ClaimUses {
 public:
  // `known`: the DRA objects known (nullptr: none, and every use is said,
  // not sized); `namespace_name`: the pod's, where its claims are.
  // REQUIRES: policy and known outlive this reader and the uses it reads.
  ClaimUses(const Policy& policy, const ClaimInventory* known, std::string_view namespace_name)
      : policy_(policy), known_(known), namespace_name_(namespace_name) {}

  // The pod spec's resourceClaims (absent: none), set before the first read.
  void set_pod_claims(JsonView claims) { pod_claims_ = claims; }

  // Appends one ClaimUse per element of the container's resources.claims
  // to `out`, and adds the GPUs of the known ones to the container: once
  // per claim among the app containers and sidecars (`shared`, which share
  // a claim's devices), once in each init container (which has them alone).
  void read(JsonView claims, ContainerFacts& container, const std::string& resources_field, bool shared,
            std::vector<ClaimUse>& out);

 private:
  void resolve(ClaimUse& use, ContainerFacts& container, bool shared);

  const Policy& policy_;
  const ClaimInventory* known_;
  std::string_view namespace_name_;
  JsonView pod_claims_;
  // The pod's entries by name: the kind and name of the claim's source (the
  // first given when a name repeats). Made at the first use of a claim.
  std::optional<std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>>> sources_;
  // The claims (and requests) whose GPUs an app container or sidecar counted.
  std::unordered_set<std::string> counted_;
};

}  // namespace gpusizer
