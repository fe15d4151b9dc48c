#include "gpusizer/json/json_view.h"

#include <algorithm>
#include <charconv>

#include "gpusizer/json/json_text.h"
#include "gpusizer/json/paths.h"

namespace gpusizer {

using simdjson::dom::element;
using simdjson::dom::element_type;

std::string_view JsonView::type_name() const {
  if (is_null()) return "null";
  switch (element_.type()) {
    case element_type::OBJECT: return "object";
    case element_type::ARRAY: return "array";
    case element_type::STRING: return "string";
    case element_type::BOOL: return "boolean";
    case element_type::NULL_VALUE: return "null";
    default: return "number";
  }
}

JsonView JsonView::operator[](std::string_view key) const {
  if (!is_object()) return {};
  element child;
  // at_key compares raw bytes, as keys are written (no escapes in names
  // the decisions read).
  if (simdjson::dom::object(element_).at_key(key).get(child)) return {};
  return JsonView(child);
}

std::string_view JsonView::string() const {
  if (!is_string()) return {};
  return std::string_view(element_);
}

std::vector<std::pair<std::string_view, JsonView>> JsonView::members() const {
  std::vector<std::pair<std::string_view, JsonView>> out;
  for_each_member([&](std::string_view key, JsonView value) { out.emplace_back(key, value); });
  return out;
}

std::vector<JsonView> JsonView::elements() const {
  std::vector<JsonView> out;
  for_each_element([&](JsonView item) { out.push_back(item); });
  return out;
}

std::string JsonView::text() const { return present_ ? simdjson::minify(element_) : "null"; }

bool operator==(const JsonView& a, const JsonView& b) {
  if (a.is_absent() || b.is_absent()) return a.is_absent() == b.is_absent();
  const element_type type = a.element_.type();
  if (type != b.element_.type()) return false;
  switch (type) {
    case element_type::OBJECT: {
      auto left = a.members();
      auto right = b.members();
      if (left.size() != right.size()) return false;
      // Sorted by key, so objects compare in n log n whatever their order
      // (keys are unique: the reader refuses repeats).
      auto by_key = [](const auto& x, const auto& y) { return x.first < y.first; };
      std::sort(left.begin(), left.end(), by_key);
      std::sort(right.begin(), right.end(), by_key);
      for (std::size_t i = 0; i < left.size(); ++i) {
        if (left[i].first != right[i].first || !(left[i].second == right[i].second)) return false;
      }
      return true;
    }
    case element_type::ARRAY: {
      const auto left = a.elements();
      const auto right = b.elements();
      if (left.size() != right.size()) return false;
      for (std::size_t i = 0; i < left.size(); ++i) {
        if (!(left[i] == right[i])) return false;
      }
      return true;
    }
    case element_type::STRING: return a.string() == b.string();
    case element_type::BOOL: return a.is_true() == b.is_true();
    case element_type::INT64: return int64_t(a.element_) == int64_t(b.element_);
    case element_type::UINT64: return uint64_t(a.element_) == uint64_t(b.element_);
    case element_type::DOUBLE: return double(a.element_) == double(b.element_);
    default: return true;  // null
  }
}

std::optional<std::size_t> array_index(std::string_view token) {
  std::size_t index = 0;
  auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), index);
  if (error != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return index;
}

JsonView JsonView::child(std::string_view token) const {
  if (!is_array()) return (*this)[token];
  const auto index = array_index(token);
  element item;
  if (!index || simdjson::dom::array(element_).at(*index).get(item)) return {};
  return JsonView(item);
}

JsonView at_path(JsonView root, const std::vector<std::string>& tokens) { return PathReader(root).at(tokens); }

JsonView PathReader::at(const std::vector<std::string>& tokens) {
  std::string pointer;
  JsonView node = root_;
  for (const std::string& token : tokens) {
    node = child(node, pointer, token);
    append_pointer_token(pointer, token);
  }
  return node;
}

JsonView PathReader::child(JsonView node, std::string_view pointer, const std::string& token) {
  if (!node.is_array()) return node.child(token);
  auto slot = arrays_.find(pointer);
  if (slot == arrays_.end()) slot = arrays_.emplace(pointer, node.elements()).first;
  const auto index = array_index(token);
  if (!index || *index >= slot->second.size()) return {};
  return slot->second[*index];
}

namespace {

bool is_container(element value) {
  const element_type type = value.type();
  return type == element_type::OBJECT || type == element_type::ARRAY;
}

}  // namespace

// Whether any object in the document repeats a key. Iterative: documents
// nest up to the reader's depth limit. Its two lists are the reader's, so a
// thread that has read one review reads the next without allocating.
bool JsonReader::repeats_a_key(element root) {
  std::vector<element>& pending = pending_;
  std::vector<std::string_view>& keys = keys_;
  pending.clear();
  if (is_container(root)) pending.push_back(root);
  while (!pending.empty()) {
    const element node = pending.back();
    pending.pop_back();
    if (node.type() == element_type::ARRAY) {
      for (element item : simdjson::dom::array(node)) {
        if (is_container(item)) pending.push_back(item);
      }
      continue;
    }
    keys.clear();
    for (auto field : simdjson::dom::object(node)) {
      keys.push_back(field.key);
      if (is_container(field.value)) pending.push_back(field.value);
    }
    if (keys.size() <= 16) {
      // Most objects have a few keys: comparing pairs beats sorting. Keys
      // of one length are common ("name", "kind"): their first bytes tell
      // most apart without a call to memcmp.
      const auto same = [](std::string_view a, std::string_view b) {
        return a.size() == b.size() && (a.empty() || (a.front() == b.front() && a == b));
      };
      for (std::size_t i = 1; i < keys.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
          if (same(keys[j], keys[i])) return true;
        }
      }
      continue;
    }
    std::sort(keys.begin(), keys.end());
    if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) return true;
  }
  return false;
}

namespace {
// Buffers for documents up to this size are kept between parses: every
// review the API server sends fits.
constexpr std::size_t kRetainedCapacity = std::size_t{256} * 1024;
// repeats_a_key's lists keep room for this many entries between parses.
constexpr std::size_t kRetainedEntries = 4096;
}  // namespace

JsonReader::JsonReader(std::size_t max_depth) : max_depth_(max_depth) {
  // simdjson counts depth as parse_client_json does: max_depth nested
  // arrays and objects are read, one more is not.
  if (parser_.allocate(kRetainedCapacity, max_depth) != simdjson::SUCCESS) throw std::bad_alloc();
}

void JsonReader::release_large_buffers() noexcept {
  if (parser_.capacity() > kRetainedCapacity) {
    // A new parser: allocate() would shrink the parser's own buffers but
    // keep the document's and the copy of the input at their large size.
    parser_ = simdjson::dom::parser();
    if (parser_.allocate(kRetainedCapacity, max_depth_)) {
      // The allocation failed: the next parse allocates what it needs.
    }
  }
  if (converted_.capacity() > kRetainedCapacity) std::string().swap(converted_);
  if (pending_.capacity() > kRetainedEntries) std::vector<element>().swap(pending_);
  if (keys_.capacity() > kRetainedEntries) std::vector<std::string_view>().swap(keys_);
}

static_assert(kJsonPadding >= simdjson::SIMDJSON_PADDING);

std::optional<JsonView> JsonReader::parse_fast(std::string_view text, std::size_t capacity) {
  element root;
  const bool copy = capacity < text.size() + kJsonPadding;
  if (parser_.parse(text.data(), text.size(), copy).get(root) != simdjson::SUCCESS || repeats_a_key(root)) {
    return std::nullopt;
  }
  return JsonView(root);
}

Result<JsonView> JsonReader::parse(std::string_view text, std::size_t capacity) {
  if (auto fast = parse_fast(text, capacity)) return *fast;
  // Rare input: the nlohmann reader says what is wrong and where, or reads
  // what simdjson refuses (integers beyond 64 bits) its own way.
  auto slow = parse_client_json(text, max_depth_);
  if (!slow) return slow.status();
  return view_of(slow.value());
}

JsonView JsonReader::view_of(const nlohmann::json& document) {
  converted_ = to_json_text(document);
  element root;
  // nlohmann writes numbers simdjson reads (doubles), and unique keys.
  if (parser_.parse(converted_.data(), converted_.size()).get(root) != simdjson::SUCCESS) return {};
  return JsonView(root);
}

}  // namespace gpusizer
