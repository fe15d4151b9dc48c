#include "gpusizer/util/kubernetes_names.h"

#include <algorithm>

#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

constexpr std::size_t kLabelMaxBytes = 63;
constexpr std::size_t kSubdomainMaxBytes = 253;

bool is_lower_alphanumeric(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?, whatever its length.
bool is_label_text(std::string_view text) {
  if (text.empty() || !is_lower_alphanumeric(text.front()) || !is_lower_alphanumeric(text.back())) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return is_lower_alphanumeric(c) || c == '-'; });
}

}  // namespace

bool is_dns1123_label(std::string_view text) { return text.size() <= kLabelMaxBytes && is_label_text(text); }

bool is_dns1123_subdomain(std::string_view text) {
  if (text.size() > kSubdomainMaxBytes) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = std::min(text.find('.', start), text.size());
    if (!is_label_text(text.substr(start, dot - start))) return false;
    if (dot == text.size()) return true;
    start = dot + 1;
  }
}

bool is_kind_name(std::string_view text) {
  const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (text.empty() || text.size() > kLabelMaxBytes || !letter(text.front()) || text.back() == '-') return false;
  return std::all_of(text.begin(), text.end(), [&](char c) { return letter(c) || digit(c) || c == '-'; });
}

std::string shown_namespace(std::string_view ns) {
  return ns.empty() || is_dns1123_label(ns) ? std::string(ns) : in_quotes(ns);
}

std::string shown_name(std::string_view name) {
  if (name.empty() || is_dns1123_subdomain(name)) return std::string(name);
  if (name.ends_with('*')) {
    std::string_view prefix = name.substr(0, name.size() - 1);
    if (prefix.size() > 1 && prefix.ends_with('-')) prefix.remove_suffix(1);
    if (prefix.empty() || is_dns1123_subdomain(prefix)) return std::string(name);
  }
  return in_quotes(name);
}

std::string shown_kind(std::string_view kind) {
  return kind.empty() || is_kind_name(kind) ? std::string(kind) : in_quotes(kind);
}

std::string shown_operation(std::string_view operation) {
  for (const std::string_view known : {"CREATE", "UPDATE", "DELETE", "CONNECT"}) {
    if (operation == known) return std::string(operation);
  }
  return operation.empty() ? std::string() : in_quotes(operation);
}

std::string shown_object(std::string_view ns, std::string_view name) {
  if (ns.empty()) return shown_name(name);
  if (name.empty()) return shown_namespace(ns);
  return shown_namespace(ns) + "/" + shown_name(name);
}

}  // namespace gpusizer
