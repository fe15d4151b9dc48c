#include "gpusizer/sizing/messages.h"

#include <string_view>
#include <utility>

#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {
std::size_t g_warning_width = kMaxWarningBytes;  // NOLINT: one setting per process, set_warning_width
}  // namespace

void set_warning_width(std::size_t bytes) { g_warning_width = bytes; }

std::size_t warning_width() { return g_warning_width; }

// Taken by value: a message built for it is moved in and out, not copied.
std::string fit(std::string text) {
  if (text.size() <= g_warning_width) return text;
  return truncate_utf8(text, g_warning_width);
}

std::string fit_warning(const std::string& prefix, const std::string& container, const std::string& rest) {
  constexpr std::string_view kOpen = "container \"";
  constexpr std::string_view kClose = "\": ";
  const std::size_t fixed = prefix.size() + kOpen.size() + kClose.size() + rest.size();
  std::string name_cut;
  std::string_view name = container;
  if (fixed + name.size() > g_warning_width && fixed + 8 < g_warning_width) {
    name_cut = truncate_utf8(name, g_warning_width - fixed);
    name = name_cut;
  }
  // One allocation: the message is written once, in a block of its size.
  std::string text;
  text.reserve(fixed + name.size());
  text.append(prefix).append(kOpen).append(name).append(kClose).append(rest);
  return fit(std::move(text));
}

std::string profile_text(const Profile& profile) { return profile.name + " profile"; }

std::string show(const std::optional<Quantity>& quantity) { return quantity ? quantity->to_string() : "unset"; }

std::string opt_out_fix(const PodFacts& pod, const char* what) {
  return pod.opted_out && pod.mode == Mode::kMutate
             ? ", or remove annotation " + std::string(kMutateOptOutKey) + "=false so gpu-sizer sets " + what
             : "";
}

}  // namespace gpusizer
