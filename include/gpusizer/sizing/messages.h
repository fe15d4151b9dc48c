// The wording the rules and the decider share, so a pod's messages read
// alike whichever rule wrote them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// kubectl may cut a warning past 120 characters: each stays below.
inline constexpr std::size_t kMaxWarningBytes = 119;

// text cut to kMaxWarningBytes.
std::string fit(std::string text);

// prefix + `container "NAME": ` + rest, cut to kMaxWarningBytes by
// shortening the container name (up to 63 characters) rather than the end,
// which holds the numbers a person acts on.
std::string fit_warning(const std::string& prefix, const std::string& container, const std::string& rest);

// "train profile".
std::string profile_text(const Profile& profile);

// A quantity, or "unset".
std::string show(const std::optional<Quantity>& quantity);

// How a pod opted out of mutation gets gpu-sizer to set `what` again: only
// in mutate mode (in enforce and audit modes the user sets values).
// Empty for a pod that did not opt out.
std::string opt_out_fix(const PodFacts& pod, const char* what);

}  // namespace gpusizer
