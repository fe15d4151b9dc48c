#include "gpusizer/check/osmo/fields.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace gpusizer::osmo {

OsmoFieldSource field_source(const std::string& marked_value, const Rendered& rendered, bool allow_unit) {
  OsmoFieldSource source;
  std::vector<std::size_t> used;
  std::string written;  // the value with markers turned back into their text
  std::size_t p = 0;
  while (p < marked_value.size()) {
    const std::size_t head = marked_value.find(kMarkerHead, p);
    if (head == std::string::npos) {
      written += marked_value.substr(p);
      break;
    }
    written += marked_value.substr(p, head - p);
    std::size_t q = head + kMarkerHead.size();
    std::size_t index = 0;
    const std::size_t digits = q;
    while (q < marked_value.size() && std::isdigit(static_cast<unsigned char>(marked_value[q]))) {
      index = index * 10 + static_cast<std::size_t>(marked_value[q] - '0');
      ++q;
    }
    if (q == digits || marked_value.compare(q, kMarkerTail.size(), kMarkerTail) != 0 || index >= rendered.subs.size()) {
      written += marked_value.substr(head, q - head);
      p = q;
      continue;
    }
    used.push_back(index);
    written += rendered.subs[index].source;
    p = q + kMarkerTail.size();
  }
  if (used.empty()) {
    source.kind = OsmoFieldSource::Kind::kLiteral;
    return source;
  }
  for (std::size_t index : used) {
    if (!rendered.subs[index].evaluated) {
      source.evaluated = false;
      source.problem = rendered.subs[index].problem;
    }
  }
  const Substitution& only = rendered.subs[used.front()];
  const std::string tail = written.substr(std::min(written.size(), only.source.size()));
  const bool unit_ok = tail.empty() || (allow_unit && unit_bytes(tail) > 0);
  if (used.size() == 1 && written.starts_with(only.source) && unit_ok && !only.plain_variable.empty() &&
      only.evaluated) {
    source.kind = OsmoFieldSource::Kind::kVariable;
    source.variable = only.plain_variable;
    source.unit = tail;
    return source;
  }
  source.kind = OsmoFieldSource::Kind::kExpression;
  source.expression = written;
  return source;
}

int64_t unit_bytes(std::string_view unit) {
  int64_t bytes = 1;
  for (const char* u : kBinaryUnits) {
    bytes *= 1024;
    if (unit == u) return bytes;
  }
  return 0;
}

bool is_cpu_number(std::string_view text) {
  if (text.empty()) return false;
  bool dot = false, digit = false;
  for (char c : text) {
    if (c == '.' && !dot) {
      dot = true;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else {
      return false;
    }
  }
  return digit;
}

std::string shell_pair(const std::string& name, const std::string& value) {
  const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_./:=@%+,-").find(c) != std::string_view::npos;
  });
  if (plain) return name + "=" + value;
  std::string quoted = "'";
  for (char c : value) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return name + "=" + quoted + "'";
}

}  // namespace gpusizer::osmo
