#include "gpusizer/util/strings.h"

#include "gpusizer/util/contract.h"

namespace gpusizer {

namespace {

// The code point of the UTF-8 sequence at text[at], and its length; length 0
// when the bytes there are not UTF-8 (a stray continuation byte, a cut or
// overlong sequence, a surrogate, past U+10FFFF).
struct Decoded {
  char32_t code_point = 0;
  std::size_t length = 0;
};

Decoded decode_utf8(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {lead, 1};
  std::size_t length = 0;
  char32_t code_point = 0;
  char32_t smallest = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code_point = lead & 0x1F, smallest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code_point = lead & 0x0F, smallest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code_point = lead & 0x07, smallest = 0x10000;
  } else {
    return {};
  }
  if (at + length > text.size()) return {};
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return {};
    code_point = (code_point << 6) | (byte(i) & 0x3F);
  }
  const bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
  if (code_point < smallest || surrogate || code_point > 0x10FFFF) return {};
  return {code_point, length};
}

// Characters that change how the text around them is read rather than
// showing as themselves: control characters, bidirectional formatting
// (the "Trojan Source" reorderings) and line or paragraph separators.
bool hides_or_reorders(char32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F ||
         (c >= 0x2028 && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

// An ASCII byte printable() and in_quotes() (`quoting`) keep as it is.
bool shows_as_itself(char byte, bool quoting) {
  return byte >= 0x20 && byte < 0x7F && !(quoting && (byte == '"' || byte == '\\'));
}

// Appends text to out as printable() shows it, with '"' and '\\' escaped
// too when `quoting`, while out stays within max_bytes. False when text
// did not fit whole.
bool append_escaped(std::string& out, std::string_view text, std::size_t max_bytes, bool quoting) {
  std::size_t at = 0;
  while (at < text.size()) {
    // Printable ASCII shows as itself: a run of it is copied at once, where
    // decoding and appending each character cost ~60 instructions a byte
    // (a review's log line and /status record show a few of these texts).
    // The run is looked at only as far as out has room: a megabyte name
    // shown cut in each of a review's messages costs the cut, not the name.
    const std::size_t room = max_bytes > out.size() ? max_bytes - out.size() : 0;
    const std::size_t scan_end = at + std::min(text.size() - at, room);
    std::size_t run = at;
    while (run < scan_end && shows_as_itself(text[run], quoting)) ++run;
    out.append(text, at, run - at);
    at = run;
    if (at == text.size()) break;
    if (shows_as_itself(text[at], quoting)) return false;  // out is full
    const Decoded decoded = decode_utf8(text, at);
    const char32_t c = decoded.code_point;
    std::string_view piece = text.substr(at, decoded.length);
    char escape[6];  // \u202e, \xff or \"
    if (decoded.length == 0) {
      const auto bad = static_cast<unsigned char>(text[at]);
      piece = std::string_view(escape, 4);
      escape[0] = '\\', escape[1] = 'x', escape[2] = kHexDigits[bad >> 4], escape[3] = kHexDigits[bad & 0xF];
    } else if (hides_or_reorders(c)) {
      piece = std::string_view(escape, 6);
      escape[0] = '\\', escape[1] = 'u';
      for (int i = 0; i < 4; ++i) escape[2 + i] = kHexDigits[(c >> (12 - 4 * i)) & 0xF];
    } else if (quoting && (c == '"' || c == '\\')) {
      piece = std::string_view(escape, 2);
      escape[0] = '\\', escape[1] = static_cast<char>(c);
    }
    if (out.size() + piece.size() > max_bytes) return false;
    out += piece;
    at += decoded.length == 0 ? 1 : decoded.length;
  }
  return true;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  GPU_SIZER_REQUIRE(max_bytes >= 3);
  std::string out;
  if (append_escaped(out, text, max_bytes, false)) return out;
  out.clear();
  append_escaped(out, text, max_bytes - 3, false);
  return out + "...";
}

std::string in_quotes(std::string_view text, std::size_t max_bytes) {
  std::string out = "\"";
  const bool whole = append_escaped(out, text, max_bytes == std::string::npos ? max_bytes : max_bytes + 1, true);
  out += '"';
  if (!whole) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace gpusizer
