// RFC 6902 JSON Patch construction that is always applicable: pointer tokens
// are escaped (`nvidia.com/gpu` -> `nvidia.com~1gpu`) and missing parent maps
// are added before the keys under them.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpusizer/json/json_view.h"
#include "gpusizer/json/paths.h"

namespace gpusizer {

// Collects `add` operations against a document without copying it, as the
// JSON text of the patch: the answer carries that text, so no JSON values
// are built on the way.
class PatchBuilder {
 public:
  // REQUIRES: document outlives the builder. Past max_bytes of patch
  // text, operations are no longer written and overflowed() says so: the
  // patch is then incomplete and must not be used.
  explicit PatchBuilder(JsonView document, std::size_t max_bytes = SIZE_MAX)
      : document_(document), max_bytes_(max_bytes) {}

  // Sets the value at tokens (from the document root). When a parent map is
  // absent (or null) one `add` creates it with the value nested inside;
  // later sets under it add to the created map. Array indices are tokens
  // such as "0" and must exist.
  void set(const std::vector<std::string>& tokens, std::string_view value);
  // As set, with a JSON value (an object or array written as JSON text).
  void set_json(const std::vector<std::string>& tokens, std::string_view json_value);
  // Appends a JSON value to the array at tokens: `/-` when the array exists
  // (or this patch added it), else one `add` of a one-element array.
  void append_json(const std::vector<std::string>& array_tokens, std::string_view json_value);

  bool empty() const { return operations_.empty(); }
  bool overflowed() const { return overflowed_; }
  // The patch as compact JSON text: an array of operations, keys in
  // nlohmann's (sorted) order.
  std::string text() const { return "[" + operations_ + "]"; }
  // The patch as a JSON value, for tools that apply it.
  nlohmann::json operations() const { return nlohmann::json::parse(text()); }

 private:
  PathReader document_;  // a pod of 5000 containers is patched at every index
  std::size_t max_bytes_;
  bool overflowed_ = false;
  std::string operations_;         // the operations written so far, comma-separated
  std::set<std::string> created_;  // pointers of maps this patch adds
  // The last walk down the document, one step per token: a pod's sets come
  // in runs under one container (requests, then limits, resource after
  // resource), so each walk resumes where it parts from the previous one.
  struct Step {
    std::string token;
    std::size_t pointer_length;  // of pointer_ through this token
    JsonView node;               // what the token names
  };
  std::vector<Step> walked_;
  std::string pointer_;  // through the walked steps (and beyond, while a set runs)

  // Writes one operation: {"op":"add","path":pointer,"value":...} with the
  // value nested under nested_keys (outermost first).
  // json: the value is JSON text, written as it is; else a string.
  void add_operation(std::string_view pointer, std::span<const std::string> nested_keys, std::string_view value,
                     bool json);
  void put(const std::vector<std::string>& tokens, std::string_view value, bool json);
};

}  // namespace gpusizer
