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

#include <boost/container/small_vector.hpp>
#include <nlohmann/json.hpp>

#include "gpusizer/json/json_view.h"
#include "gpusizer/json/paths.h"

namespace gpusizer {

// Edits under one object of a document (a container, say), to be written
// by PatchBuilder::merge as one operation. Tokens are relative to that
// object. REQUIRES: the tokens' text outlives the overlay (the overlay
// keeps views: a container's keys are held by its facts and the policy).
class PatchOverlay {
 public:
  // Sets the value at tokens; json: value is JSON text, else a string.
  // REQUIRES: nothing else is set at, under or above tokens.
  void set(std::span<const std::string_view> tokens, std::string value, bool json = false);
  // Appends a JSON value to the array at array_tokens.
  void append_json(std::span<const std::string_view> array_tokens, std::string json_value);
  bool empty() const { return nodes_.size() <= 1; }

 private:
  friend class PatchBuilder;
  struct Node {
    std::string_view token;
    bool is_set = false;
    bool json = false;
    std::string value;                  // when is_set
    std::vector<std::string> appended;  // JSON texts appended to the array here
    // Indices into nodes_, in the order first edited; in place for the
    // few a node has (a container's resources: requests and limits, each
    // of up to three resources), so no allocation per node.
    boost::container::small_vector<std::size_t, 3> children;
  };
  std::vector<Node> nodes_;  // nodes_[0] is the object itself, once anything is edited

  std::size_t node_at(std::span<const std::string_view> tokens);
};

// Collects `add` (and merge's `replace`) operations against a document
// without copying it, as the JSON text of the patch: the answer carries
// that text, so no JSON values are built on the way.
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
  // Writes the overlay's edits under the object at tokens as one operation
  // (`replace` where the value exists, else `add`), at the deepest map or
  // array that holds them all: its members as the
  // document has them (copied as they are), with the overlay's values set
  // and elements appended. A lone set or a lone appended element is
  // written as set and append_json write it. A container whose requests
  // and limits are raised gets one operation on its `resources`; one that
  // also gains a mount, one `replace` of the container.
  // REQUIRES: no other edit of this builder is at or under the written
  // map, before or after.
  void merge(const std::vector<std::string>& tokens, const PatchOverlay& overlay);

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

  // Writes one operation: {"op":op,"path":pointer,"value":...} with the
  // value nested under nested_keys (outermost first).
  // json: the value is JSON text, written as it is; else a string.
  void add_operation(std::string_view pointer, std::span<const std::string> nested_keys, std::string_view value,
                     bool json, std::string_view op = "add");
  void put(const std::vector<std::string>& tokens, std::string_view value, bool json);
  // Writes one `add` at the missing parent tokens[missing] (pointer_ is
  // through it) with the rest of tokens nested inside, and records the
  // maps it creates.
  void add_missing(std::span<const std::string> tokens, std::size_t missing, std::string_view value, bool json);
  // Walks down to the parent of tokens' last token, resuming the last walk
  // (a pod's edits come in runs under one container); pointer_ is then the
  // pointer of how far it got. Returns that depth: tokens.size() - 1 when
  // every parent exists (or this patch created it), with node the parent;
  // else the index of the first missing parent.
  std::size_t walk(std::span<const std::string> tokens, JsonView& node);
  // Writes the overlay's node n over the document's value as JSON text.
  static void write_merged(JsonView existing, const PatchOverlay& overlay, std::size_t n, std::string& out);
};

}  // namespace gpusizer
