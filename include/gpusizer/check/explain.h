// `gpu-sizer explain`: the rows printed for one pod, built from the typed
// explanation the decision carries (sizing/pod_sizing.h), never from its
// messages, so a reworded message cannot move or hide a row.
#pragma once

#include <string>
#include <vector>

#include "gpusizer/sizing/pod_sizing.h"

namespace gpusizer {

struct ExplainRow {
  std::string title;                 // the rule's name ("GPU memory"), "binding", or `container "trainer"`
  std::string floor;                 // what it asks of the pod, or "-"
  std::string detail;                // why
  std::vector<RulePart> parts = {};  // the rule's arithmetic, one line each
};

// The rows of one pod, from its two passes as the API server runs them:
// the floor rules' rows and the binding floor from the mutating pass (the
// object as written: what set each value), the check rules' rows and each
// GPU container's requests from the validating pass (the object as
// mutated: what it runs with). Rules in the order of sizing_rules(), then
// the binding floor, then the containers.
std::vector<ExplainRow> explain_rows(const Explanation& written, const Explanation& mutated);

}  // namespace gpusizer
