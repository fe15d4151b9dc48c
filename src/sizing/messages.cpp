#include "gpusizer/sizing/messages.h"

#include "gpusizer/util/strings.h"

namespace gpusizer {

std::string fit(std::string_view text) { return truncate_utf8(text, kMaxWarningBytes); }

std::string fit_warning(const std::string& prefix, const std::string& container, const std::string& rest) {
  const std::string tail = "\": " + rest;
  const std::string head = prefix + "container \"";
  std::string name = container;
  const std::size_t fixed = head.size() + tail.size();
  if (fixed + name.size() > kMaxWarningBytes && fixed + 8 < kMaxWarningBytes) {
    name = truncate_utf8(name, kMaxWarningBytes - fixed);
  }
  return fit(head + name + tail);
}

std::string profile_text(const Profile& profile) { return profile.name + " profile"; }

std::string show(const std::optional<Quantity>& quantity) { return quantity ? quantity->to_string() : "unset"; }

std::string opt_out_fix(const PodFacts& pod, const char* what) {
  return pod.opted_out && pod.mode == Mode::kMutate
             ? ", or remove annotation " + std::string(kMutateOptOutKey) + "=false so gpu-sizer sets " + what
             : "";
}

}  // namespace gpusizer
