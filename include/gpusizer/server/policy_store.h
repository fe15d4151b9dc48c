// The active policy, swapped when its file changes. Readers take
// a shared_ptr snapshot per request, so a reload never changes a decision
// half-way through.
#pragma once

#include <memory>
#include <string>

#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/result.h"
#include "gpusizer/util/snapshot.h"

namespace gpusizer {

class PolicyStore {
 public:
  // Loads the file at path, or the embedded default when path is empty.
  // Fails (naming the file and field) when the file is unreadable or invalid:
  // a webhook must not start on a policy its operator did not write.
  static Result<std::unique_ptr<PolicyStore>> open(const std::string& path);

  std::shared_ptr<const Policy> current() const { return current_.load(); }
  const std::string& path() const { return path_; }

  // Re-reads the file. True when a changed, valid file replaced the
  // policy, false when it is unchanged (or there is no file); fails, saying
  // why, when a changed file is invalid or unreadable: the old policy stays,
  // and the failure is reported once per distinct content, not every poll.
  Result<bool> reload_if_changed();

 private:
  PolicyStore(std::string path, std::shared_ptr<const Policy> policy, std::string text_sha256);

  std::string path_;
  Snapshot<Policy> current_;
  std::string seen_sha256_;  // of the last text read, valid or not
};

}  // namespace gpusizer
