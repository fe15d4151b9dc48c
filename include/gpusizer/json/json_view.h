// Read-only JSON for the decisions: documents parsed with simdjson (the
// whole handler for a 12 KB pod review went from 275 to about 76 µs when
// it replaced an nlohmann DOM, docs/performance.md) and read through JsonView, where a missing member and
// a value of the wrong type read as absent, so odd input gets an answer,
// not a crash.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "gpusizer/json/json_access.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

// One value of a parsed document, or absent. Valid while the JsonReader
// that parsed it neither parses again nor is destroyed.
class JsonView {
 public:
  JsonView() = default;  // absent
  explicit JsonView(simdjson::dom::element element) : element_(element), present_(true) {}

  bool is_absent() const { return !present_; }
  bool is_null() const { return !present_ || element_.is_null(); }  // absent or JSON null
  bool is_object() const { return present_ && element_.is_object(); }
  bool is_array() const { return present_ && element_.is_array(); }
  bool is_string() const { return present_ && element_.is_string(); }
  bool is_number() const { return present_ && element_.is_number(); }
  bool is_true() const { return present_ && element_.is_bool() && bool(element_); }
  // "object", "array", "string", "number", "boolean", "null" (also absent).
  std::string_view type_name() const;

  // The member named key of an object; absent when this is not an object
  // or has no such member.
  JsonView operator[](std::string_view key) const;
  bool contains(std::string_view key) const { return !(*this)[key].is_absent(); }
  // One JSON Pointer step (unescaped): a member of an object, or an element
  // of an array by its decimal index; absent when there is none.
  JsonView child(std::string_view token) const;
  // The string, or "" when this is not a string.
  std::string_view string() const;
  // The members of an object in document order; empty for anything else.
  std::vector<std::pair<std::string_view, JsonView>> members() const;
  // The elements of an array; empty for anything else.
  std::vector<JsonView> elements() const;
  // Calls visit(key, value) for each member of an object in document order,
  // or visit(element) for each element of an array, reading them in place
  // where members() and elements() copy them out; nothing for anything else.
  template <typename Visit>
  void for_each_member(Visit&& visit) const {
    if (!is_object()) return;
    for (auto field : simdjson::dom::object(element_)) visit(field.key, JsonView(field.value));
  }
  template <typename Visit>
  void for_each_element(Visit&& visit) const {
    if (!is_array()) return;
    for (simdjson::dom::element item : simdjson::dom::array(element_)) visit(JsonView(item));
  }
  // The value as compact JSON text ("4", "1.5" for numbers).
  std::string text() const;

  // Equal values: objects with the same members in any order, arrays
  // element by element, numbers by type and value.
  friend bool operator==(const JsonView& a, const JsonView& b);

 private:
  simdjson::dom::element element_;
  bool present_ = false;
};

// A JSON Pointer token naming an array element ("0", "12"), as a number.
std::optional<std::size_t> array_index(std::string_view token);

// The value at tokens (JSON Pointer tokens, unescaped) below root; absent
// when any step is missing.
JsonView at_path(JsonView root, const std::vector<std::string>& tokens);

// Reads one document at many paths, as at_path does, keeping the elements
// of each array it walks: finding element i of a parsed array takes i
// steps, and a workflow's thousands of templates are read at every index.
// REQUIRES: the document outlives the reader.
class PathReader {
 public:
  explicit PathReader(JsonView root) : root_(root) {}
  JsonView root() const { return root_; }
  JsonView at(const std::vector<std::string>& tokens);
  // One step down from node, which is at pointer (as json_pointer writes it).
  JsonView child(JsonView node, std::string_view pointer, const std::string& token);

 private:
  JsonView root_;
  std::map<std::string, std::vector<JsonView>, std::less<>> arrays_;  // the elements, by the array's pointer
};

// object[key] when it is a string, else "".
inline std::string string_member(JsonView object, std::string_view key) { return std::string(object[key].string()); }

// The bytes past a text's end simdjson reads (its SIMDJSON_PADDING): a
// buffer that has them spares JsonReader::parse a copy of the text.
inline constexpr std::size_t kJsonPadding = 64;

// Parses documents one at a time, reusing its buffers: a review answered on
// a server thread allocates nothing here once the thread has seen one of
// its size. Views from a parse stay valid until the next parse.
class JsonReader {
 public:
  explicit JsonReader(std::size_t max_depth = kMaxJsonDepth);

  // The same contract as parse_client_json (json_access.h): one JSON value,
  // at most max_depth nested arrays and objects, no repeated keys, valid
  // UTF-8; failures say what is wrong and where, in its words (its reader
  // runs again on failing input to say where). Values simdjson cannot hold
  // (integers beyond 64 bits) read as nlohmann reads them, as doubles.
  // capacity: the bytes readable from text.data(); with kJsonPadding past
  // the text's end (a request body read into a buffer reserved for it),
  // simdjson reads the text in place instead of copying it first.
  Result<JsonView> parse(std::string_view text, std::size_t capacity = 0);

  // An nlohmann document (from YAML or a test) read as a view.
  JsonView view_of(const nlohmann::json& document);

  // Gives back the buffers a large document grew (simdjson keeps several
  // times a document's size), keeping those of an ordinary review: a
  // server thread that once read an 8 MB body must not hold ~50 MB for
  // the rest of its life. Views from earlier parses become invalid.
  void release_large_buffers() noexcept;
  // The largest document the buffers hold now, in bytes.
  std::size_t capacity() const { return parser_.capacity(); }

 private:
  // The document when simdjson reads it and it repeats no key; nullopt
  // sends it to the slower reader that says what is wrong.
  std::optional<JsonView> parse_fast(std::string_view text, std::size_t capacity);
  bool repeats_a_key(simdjson::dom::element root);

  std::size_t max_depth_;
  simdjson::dom::parser parser_;
  std::string converted_;  // the text of a document read through nlohmann first
  // repeats_a_key's work lists, kept between parses.
  std::vector<simdjson::dom::element> pending_;
  std::vector<std::string_view> keys_;
};

}  // namespace gpusizer
