// Small string helpers shared by the layers.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/util/result.h"

namespace gpusizer {

// Lowercase hexadecimal digits: a byte b is kHexDigits[b >> 4], kHexDigits[b & 0xf].
inline constexpr char kHexDigits[] = "0123456789abcdef";

// The text with its ASCII letters in lower case.
inline std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// text without leading and trailing whitespace (spaces, tabs, newlines).
inline std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n\f\v");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n\f\v");
  return text.substr(first, last - first + 1);
}

// value / unit as a decimal with no trailing zeros: (1560, 1000) -> "1.56",
// (40000, 1000) -> "40".
inline std::string decimal_text(int64_t value, int64_t unit) {
  std::string text = std::to_string(value / unit);
  if (value % unit == 0) return text;
  std::string fraction = std::to_string(unit + value % unit).substr(1);
  while (fraction.back() == '0') fraction.pop_back();
  return text + "." + fraction;
}

// Thousandths as a decimal: 850 -> "0.85".
inline std::string milli_text(int64_t milli) { return decimal_text(milli, 1000); }

// "1 GPU", "4 GPUs".
inline std::string gpus_text(int64_t gpus) { return std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs"); }

// The most bytes a message shows of one thing it read (a quoted value, a
// step of a field path): a Kubernetes label (63) fits whole, a 1 MB number
// does not.
inline constexpr std::size_t kQuotedBytes = 64;

// text as it can be shown where a person reads it raw (a log line, the
// /status page, a metric label, an answer), in at most max_bytes bytes:
// control characters (C0, DEL, C1), Unicode's bidirectional formatting
// characters (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and the
// line and paragraph separators (U+2028, U+2029) are written as \u202e,
// bytes that are not UTF-8 as \xff; text longer than max_bytes is cut
// (never inside a character or an escape) and ends in "...". Everything
// else, backslashes included, is kept, so showing shown text changes
// nothing. REQUIRES: max_bytes >= 3.
std::string printable(std::string_view text, std::size_t max_bytes);

// How messages quote what they read: "trainer", with '"' and '\' escaped
// as well as what printable() escapes. Past max_bytes, a prefix and the
// whole length: "1111...1"... (1048576 bytes), so a 1 MB value gives a
// short answer and a short log line. max_bytes npos: never cut.
std::string in_quotes(std::string_view text, std::size_t max_bytes = kQuotedBytes);

// Escapes & < > " ' for HTML text and attribute values (double- or
// single-quoted), so user-controlled text never becomes markup.
std::string html_escape(std::string_view text);

// How a person reads a path of JSON Pointer tokens:
// "spec.templates[2].container" for {"spec", "templates", "2", "container"}.
// A step is shown as printable() shows it, cut at kQuotedBytes (keys come
// from the request).
inline std::string field_path(const std::vector<std::string>& tokens) {
  std::string field;
  for (const auto& token : tokens) {
    const bool index = !token.empty() && token.size() <= kQuotedBytes &&
                       std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (index) {
      field += "[" + token + "]";
    } else {
      field += (field.empty() ? "" : ".") + printable(token, kQuotedBytes);
    }
  }
  return field;
}

// Whether `names` (any range of strings) holds `name`.
inline bool contains(const auto& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

inline std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

// Cuts text to at most max_bytes, ending in "..." when cut, never inside a
// UTF-8 sequence (a split character would make the JSON answer invalid).
// Reads at most max_bytes + 1 of it, however long it is.
inline std::string truncate_utf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t end = max_bytes >= 3 ? max_bytes - 3 : 0;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end)) + "...";
}

// Joins items while the text stays within max_bytes, then counts the rest:
// "a; b; ... and 12 more containers". The first item is always kept (cut to
// max_bytes), so the text says at least one thing.
inline std::string join_capped(const std::vector<std::string>& items, std::string_view separator, std::size_t max_bytes,
                               std::string_view what) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && out.size() + separator.size() + items[i].size() > max_bytes) {
      return out + std::string(separator) + "... and " + std::to_string(items.size() - i) + " more " +
             std::string(what);
    }
    if (i > 0) out += separator;
    out += i > 0 ? items[i] : truncate_utf8(items[i], max_bytes);
  }
  return out;
}

// The error about one part of a key=value annotation, as its parser
// returns it: `part "zero=4": must be 0, 1, 2 or 3` (quoted by in_quotes).
inline Status part_error(std::string_view part, std::string_view problem) {
  return Status::invalid_argument("part " + in_quotes(part) + ": " + std::string(problem));
}

// One part of a "key=value,key=value" annotation, each piece trimmed.
struct KeyValuePart {
  std::string_view text;
  std::string_view key;
  std::string_view value;
};

// A key=value annotation longer than this is refused unread: real ones are
// a few dozen bytes, and the object's annotation is read again for each of
// its pod templates (a workflow's thousands).
inline constexpr std::size_t kMaxKeyValuesBytes = 4096;

// Fails on text longer than kMaxKeyValuesBytes, showing `example`: what a
// parser of a key=value annotation checks first.
inline Status check_key_values_size(std::string_view text, std::string_view example) {
  if (text.size() <= kMaxKeyValuesBytes) return {};
  return Status::invalid_argument("is " + std::to_string(text.size()) + " bytes, more than the " +
                                  std::to_string(kMaxKeyValuesBytes) +
                                  " gpu-sizer reads; write key=value parts, e.g. " + std::string(example));
}

// The parts of a comma-separated key=value annotation, in order. Fails on
// an empty part (two commas in a row, or one at an end) and on a part
// without '=', showing `example` ("params=7B"); what the keys and values
// may be, the caller checks and words.
inline Result<std::vector<KeyValuePart>> read_key_values(std::string_view text, std::string_view example) {
  std::vector<KeyValuePart> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    KeyValuePart part{trim(text.substr(start, comma - start))};
    start = comma + 1;
    if (part.text.empty()) {
      return Status::invalid_argument("has an empty part; write key=value parts separated by commas");
    }
    const std::size_t equals = part.text.find('=');
    if (equals == std::string_view::npos) {
      return part_error(part.text, "must be key=value, e.g. " + std::string(example));
    }
    part.key = trim(part.text.substr(0, equals));
    part.value = trim(part.text.substr(equals + 1));
    parts.push_back(part);
  }
  return parts;
}

}  // namespace gpusizer
