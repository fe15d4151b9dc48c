// Readers for the fields of a policy file: each reads one YAML node at a
// path such as "profiles.train.table[2].memory" and, when the value is
// wrong, throws FieldError naming the path, the line and what to write.
// FieldError stays inside the policy parser (policy.cpp and this file's
// policy_fields.cpp): parse_policy turns it into a Status.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/problem.h"

namespace gpusizer::policy_fields {

// Thrown by the readers below; parse_policy turns it into a Status.
struct FieldError {
  ProblemCode code;
  std::string path;     // the field: "profiles.train.table[2].memory"
  std::string message;  // "PATH (line N): PROBLEM"
};

// Throws FieldError: "PATH (line N): PROBLEM".
[[noreturn]] void fail(ProblemCode code, const std::string& path, const YAML::Node& node, const std::string& problem);

void check_unique_keys(const YAML::Node& map, const std::string& path);
// Unknown keys are errors: a typo such as `denyFromGPUs` must not silently
// fall back to the default.
void check_keys(const YAML::Node& map, const std::string& path, std::initializer_list<std::string_view> known);
void check_keys(const YAML::Node& map, const std::string& path, std::span<const std::string_view> known);
void require_map(const YAML::Node& node, const std::string& path);

std::string read_string(const YAML::Node& node, const std::string& path);
int64_t read_int(const YAML::Node& node, const std::string& path, int64_t minimum, int64_t maximum = kMaxWhole);
enum class Zero { kRefused, kAllowed };
Quantity read_quantity(const YAML::Node& node, const std::string& path, Zero zero = Zero::kRefused);
// A plain decimal ("0.85", "40", "1.5"), held in thousandths; no suffix, so
// a typo such as "85%" is an error.
Milli read_decimal(const YAML::Node& node, const std::string& path, Milli minimum, Milli maximum);
std::vector<std::string> read_string_list(const YAML::Node& node, const std::string& path);
// true or false, as YAML writes them.
bool read_bool(const YAML::Node& node, const std::string& path);
// A Kubernetes volume name: a DNS-1123 label.
std::string read_dns_label(const YAML::Node& node, const std::string& path);

// One block of the policy (sharedMemory, gpuMemory.training, ...): a key
// given replaces the base's value, an absent key keeps it. Without a base
// (parsing the embedded default) every key is required.
class Block {
 public:
  Block(const YAML::Node& node, std::string path, bool complete, std::initializer_list<std::string_view> keys)
      : node_(node), path_(std::move(path)), complete_(complete) {
    require_map(node_, path_);
    check_keys(node_, path_, keys);
  }
  // Calls read(value, path of the value) when the key is present.
  void read(const char* key, auto read) const {
    if (const YAML::Node value = node_[key]) {
      read(value, path_ + "." + key);
    } else if (complete_) {
      fail(ProblemCode::kMissingField, path_, node_, std::string("missing field ") + key);
    }
  }
  const YAML::Node& node() const { return node_; }

 private:
  YAML::Node node_;
  std::string path_;
  bool complete_;
};

// A mapping of names to values read by read_value(node, path).
template <class Value>
std::map<std::string, Value, std::less<>> read_named(const YAML::Node& node, const std::string& path, auto read_value) {
  if (!node.IsMap() || node.size() == 0) fail(ProblemCode::kWrongType, path, node, "must be a non-empty mapping");
  check_unique_keys(node, path);
  std::map<std::string, Value, std::less<>> values;
  for (const auto& entry : node) {
    const auto name = entry.first.as<std::string>();
    values[name] = read_value(entry.second, path + "." + name);
  }
  return values;
}

// "warn" or "deny".
CheckAction read_action(const YAML::Node& node, const std::string& path);

// Each of `names`, a list of profile names at the path `keys` of the file
// (sharedMemory.profiles), names a profile of the merged policy; the
// error points at the entry where the file wrote it, else at the file.
void check_profile_names(const Policy& policy, const YAML::Node& root, std::initializer_list<const char*> keys,
                         const std::vector<std::string>& names);

// `workloads:`, a list that replaces the base's (policy_workloads.cpp).
std::vector<WorkloadKind> read_workloads(const YAML::Node& node);

}  // namespace gpusizer::policy_fields
