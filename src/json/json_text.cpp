#include "gpusizer/json/json_text.h"

#include <array>

#include <simdjson.h>

#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// The bytes a JSON string escapes: control characters, '"' and '\\'. A
// table lookup per byte is the whole test for the others.
constexpr std::array<bool, 256> kEscaped = [] {
  std::array<bool, 256> escaped{};
  for (int c = 0; c < 0x20; ++c) escaped[c] = true;
  escaped['"'] = true;
  escaped['\\'] = true;
  return escaped;
}();
}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    // Rare (answers quote parsed, valid input): nlohmann replaces what is
    // not UTF-8.
    out += nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  out += '"';
  std::size_t run = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!kEscaped[c]) continue;
    out.append(text, run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHexDigits[c >> 4];
        out += kHexDigits[c & 0xf];
    }
  }
  out.append(text, run, text.size() - run);
  out += '"';
}

namespace {

void append_value(std::string& out, const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, key);
        out += ':';
        append_value(out, item);
      }
      out += '}';
      return;
    }
    case nlohmann::json::value_t::array: {
      out += '[';
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (i) out += ',';
        append_value(out, value[i]);
      }
      out += ']';
      return;
    }
    case nlohmann::json::value_t::string: append_json_string(out, value.get_ref<const std::string&>()); return;
    default: out += value.dump(); return;  // numbers, booleans, null
  }
}

}  // namespace

std::string json_error_text(std::string_view message) {
  std::string body = R"({"error":)";
  append_json_string(body, message);
  body += '}';
  return body;
}

std::string to_json_text(const nlohmann::json& value) {
  std::string out;
  append_value(out, value);
  return out;
}

}  // namespace gpusizer
