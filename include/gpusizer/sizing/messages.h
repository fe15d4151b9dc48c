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

// kubectl may cut a warning past 120 characters: the webhook's stay below.
inline constexpr std::size_t kMaxWarningBytes = 119;

// The size warnings are cut to: kMaxWarningBytes unless lifted. `gpu-sizer
// check` and `explain` print their lines whole (a terminal or a CI log
// cuts nothing, and the end of a warning holds what to set), so they lift
// it before deciding anything. Set once, before any thread reads it.
void set_warning_width(std::size_t bytes);
std::size_t warning_width();

// text cut to warning_width().
std::string fit(std::string text);

// prefix + `container "NAME": ` + rest, cut to warning_width() by
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
