#include "gpusizer/json/json_access.h"

#include <vector>

#include "gpusizer/util/strings.h"

namespace gpusizer {

using nlohmann::json;

namespace {

// Paths in messages stop after this many steps: a path 10000 levels deep
// says nothing more than its start.
constexpr std::size_t kPathSteps = 16;

// Builds the document as nlohmann's own DOM parser does, from its
// iterative SAX parser, and refuses repeated keys and excess depth on the
// way. The depth bound matters beyond the parser: comparing and printing
// nlohmann values recurse, and a review 2 million levels deep overflowed a
// server thread's stack when an UPDATE's templates were compared.
class BoundedBuilder {
 public:
  explicit BoundedBuilder(std::size_t max_depth) : max_depth_(max_depth) {}

  bool null() { return put(nullptr); }
  bool boolean(bool value) { return put(value); }
  bool number_integer(json::number_integer_t value) { return put(value); }
  bool number_unsigned(json::number_unsigned_t value) { return put(value); }
  bool number_float(json::number_float_t value, const json::string_t&) { return put(value); }
  bool string(json::string_t& value) { return put(std::move(value)); }
  bool binary(json::binary_t& value) { return put(json::binary(std::move(value))); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& name) {
    Level& level = stack_.back();
    auto [slot, inserted] = level.value->get_ref<json::object_t&>().emplace(std::move(name), nullptr);
    if (!inserted) {
      error_ = "repeats key " + in_quotes(slot->first) + " in " + where(path());
      return false;
    }
    level.key = &slot->first;
    level.slot = &slot->second;
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const json::exception& error) {
    // The text read last can be part of an env value holding a secret:
    // errors are answered and logged without it. Line and column still
    // say where.
    error_ = "is not valid JSON: " + parse_error_quoting(error.what(), 0);
    return false;
  }

  json& root() { return root_; }
  const std::string& error() const { return error_; }

 private:
  struct Level {
    json* value;
    const std::string* key = nullptr;  // objects: the key being filled
    json* slot = nullptr;              // objects: its value
  };

  // Where the next value goes: the root, the end of an array, or the slot
  // of the key just read.
  json* next_slot() {
    if (stack_.empty()) return &root_;
    Level& level = stack_.back();
    if (level.value->is_array()) return &level.value->get_ref<json::array_t&>().emplace_back();
    return level.slot;
  }

  bool put(json value) {
    *next_slot() = std::move(value);
    return true;
  }

  bool open(json container) {
    if (stack_.size() >= max_depth_) {
      std::vector<std::string> at = path();
      if (!stack_.empty()) at.push_back(step(stack_.back(), 1));
      error_ = "nests JSON deeper than " + std::to_string(max_depth_) + " levels at " + where(at);
      return false;
    }
    json* slot = next_slot();
    *slot = std::move(container);
    stack_.push_back(Level{slot});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  // The token of the child being filled in level; arrays count `pending`
  // elements not yet added.
  static std::string step(const Level& level, std::size_t pending) {
    if (level.value->is_object()) return level.key ? *level.key : "";
    return std::to_string(level.value->size() + pending - 1);
  }

  // Tokens from the root to the innermost open container.
  std::vector<std::string> path() const {
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i + 1 < stack_.size() && tokens.size() <= kPathSteps; ++i) {
      tokens.push_back(step(stack_[i], 0));
    }
    return tokens;
  }

  static std::string where(std::vector<std::string> tokens) {
    if (tokens.empty()) return "the top level";
    const bool cut = tokens.size() > kPathSteps;
    if (cut) tokens.resize(kPathSteps);
    return field_path(tokens) + (cut ? "..." : "");
  }

  std::size_t max_depth_;
  json root_;
  std::vector<Level> stack_;
  std::string error_;
};

}  // namespace

std::string parse_error_quoting(std::string message, std::size_t max_bytes) {
  // Its number-overflow error quotes the whole number, a million digits if
  // it had them: cut as in_quotes cuts it.
  constexpr std::string_view kOverflow = "number overflow parsing '";
  if (const auto overflow = message.find(kOverflow); overflow != std::string::npos) {
    const auto number = overflow + kOverflow.size();
    const auto end = message.find('\'', number);
    if (end != std::string::npos) {
      message = message.substr(0, number - 1) + in_quotes(std::string_view(message).substr(number, end - number)) +
                message.substr(end + 1);
    }
  }
  constexpr std::string_view kQuote = "; last read: '";
  const auto start = message.find(kQuote);
  if (start == std::string::npos) return message;
  const auto text = start + kQuote.size();
  // The quote closes before "; " and more text, or at the message's end.
  auto end = message.find("'; ", text);
  if (end == std::string::npos) end = message.size() - (message.ends_with('\'') ? 1 : 0);
  if (max_bytes == 0) return message.erase(start, end + 1 - start);
  return message.replace(text, end - text, truncate_utf8(message.substr(text, end - text), max_bytes));
}

Result<json> parse_client_json(std::string_view text, std::size_t max_depth) {
  BoundedBuilder builder(max_depth);
  if (!json::sax_parse(text.begin(), text.end(), &builder))
    return Status::failure(ProblemCode::kSyntax, "", builder.error());
  return std::move(builder.root());
}

}  // namespace gpusizer
