#include "gpusizer/sizing/messages.h"

#include <atomic>
#include <string_view>
#include <utility>

#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {
// One setting per process (set_warning_width); atomic, so that a reader on
// any thread sees a whole value.
std::atomic<std::size_t> g_warning_width{kMaxWarningBytes};
}  // namespace

void set_warning_width(std::size_t bytes) { g_warning_width.store(bytes, std::memory_order_relaxed); }

std::size_t warning_width() { return g_warning_width.load(std::memory_order_relaxed); }

// Taken by value: a message built for it is moved in and out, not copied.
std::string fit(std::string text) {
  const std::size_t width = warning_width();
  if (text.size() <= width) return text;
  return truncate_utf8(text, width);
}

std::string fit_warning(const std::string& prefix, const std::string& container, const std::string& rest) {
  constexpr std::string_view kOpen = "container \"";
  constexpr std::string_view kClose = "\": ";
  const std::size_t fixed = prefix.size() + kOpen.size() + kClose.size() + rest.size();
  std::string name_cut;
  std::string_view name = container;
  const std::size_t width = warning_width();
  if (fixed + name.size() > width && fixed + 8 < width) {
    name_cut = truncate_utf8(name, width - fixed);
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
