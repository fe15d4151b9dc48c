// RFC 6902 JSON Patch construction that is always applicable: pointer tokens
// are escaped (`nvidia.com/gpu` -> `nvidia.com~1gpu`) and missing parent maps
// are added before the keys under them.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpusizer/json_view.h"

namespace gpusizer {

// RFC 6901 escaping of one reference token: `~` -> `~0`, `/` -> `~1`.
std::string escape_pointer_token(std::string_view token);

// A JSON Pointer string from tokens, each escaped.
std::string json_pointer(const std::vector<std::string>& tokens);

// Collects `add` operations against a document without copying it.
class PatchBuilder {
 public:
  // REQUIRES: document outlives the builder.
  explicit PatchBuilder(JsonView document) : document_(document) {}

  // Sets the value at tokens (from the document root). When a parent map is
  // absent (or null) one `add` creates it with the value nested inside;
  // later sets under it add to the created map. Array indices are tokens
  // such as "0" and must exist.
  void set(const std::vector<std::string>& tokens, nlohmann::json value);

  bool empty() const { return operations_.empty(); }
  const nlohmann::json& operations() const { return operations_; }

 private:
  JsonView document_;
  nlohmann::json operations_ = nlohmann::json::array();
  std::set<std::string> created_;  // pointers of maps this patch adds
  // The elements of each array walked, by pointer: finding element i of a
  // parsed array takes i steps, and a pod of 5000 containers is patched
  // at every index.
  std::map<std::string, std::vector<JsonView>, std::less<>> arrays_;

  JsonView child(JsonView node, const std::string& pointer, const std::string& token);
};

}  // namespace gpusizer
