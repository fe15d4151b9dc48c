#include "gpusizer/server/policy_store.h"

#include "gpusizer/util/digest.h"
#include "gpusizer/util/files.h"

namespace gpusizer {

PolicyStore::PolicyStore(std::string path, std::shared_ptr<const Policy> policy, std::string text_sha256)
    : path_(std::move(path)), current_(std::move(policy)), seen_sha256_(std::move(text_sha256)) {}

Result<std::unique_ptr<PolicyStore>> PolicyStore::open(const std::string& path) {
  if (path.empty()) {
    auto policy = std::make_shared<const Policy>(default_policy());
    return std::unique_ptr<PolicyStore>(new PolicyStore(path, policy, policy->sha256));
  }
  auto text = read_file(path);
  if (!text) return text.status();
  auto policy = parse_policy(text.value(), path);
  if (!policy) return policy.status();
  auto shared = std::make_shared<const Policy>(std::move(policy).value());
  return std::unique_ptr<PolicyStore>(new PolicyStore(path, shared, shared->sha256));
}

Result<bool> PolicyStore::reload_if_changed() {
  if (path_.empty()) return false;
  const std::string keeping = "; keeping the previous policy";
  auto text = read_file(path_);
  if (!text) {
    // A ConfigMap update swaps symlinks; a read in between can fail once.
    // Report each distinct failure once and keep serving the old policy.
    const std::string marker = "unreadable: " + text.error();
    if (marker == seen_sha256_) return false;
    seen_sha256_ = marker;
    return Status::io_error(text.error() + keeping);
  }
  const std::string sha = sha256_hex(text.value());
  if (sha == seen_sha256_) return false;
  seen_sha256_ = sha;
  auto policy = parse_policy(text.value(), path_);
  if (!policy) {
    Problem problem = policy.problem();
    problem.message += keeping;
    return problem;
  }
  current_.store(std::make_shared<const Policy>(std::move(policy).value()));
  return true;
}

}  // namespace gpusizer
