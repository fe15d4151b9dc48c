// What is wrong with an input, in one shape for every module: a code that
// callers and tests branch on, the field it is about, and the message a
// person acts on. Status (result.h) carries one across module boundaries;
// the pod reader and the policy parser report theirs as Problems too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpusizer {

enum class ProblemCode : uint8_t {
  kSyntax,          // the text does not parse: YAML, JSON, a template
  kWrongType,       // a field holds another type: a list for a mapping, text for a number
  kBadValue,        // a value that does not read or is out of range: "96GB", -1, "enforcing"
  kUnknownField,    // a key nothing reads (a typo such as denyFromGPUs)
  kDuplicateField,  // a key, or a named entry, given twice
  kMissingField,    // a field that must be there is not
  kUnknownName,     // a name that refers to nothing: a profile, a GPU model, a pool
  kInconsistent,    // fields that contradict each other: a table that does not ascend, flags that go together
  kTooLarge,        // past a limit: a size, a count, more GPUs than any node has
  kUnresolved,      // a templating expression where a value is needed ({{...}}, $(VAR))
  kIo,              // the system refused: a file, a socket, a TLS library call
};

// "syntax", "wrong_type", "bad_value", "unknown_field", "duplicate_field",
// "missing_field", "unknown_name", "inconsistent", "too_large",
// "unresolved", "io": as --output json and logs name it.
std::string_view to_string(ProblemCode code);

struct Problem {
  ProblemCode code = ProblemCode::kBadValue;
  // The field it is about, as the input names it
  // ("profiles.train.table[2].memory", "spec.containers[0].resources");
  // empty when it is about no one field (a file, a socket, the whole text).
  std::string path;
  // In full, for a person: what is wrong, where, and what to set.
  std::string message;
};

// The same problem, its message after `prefix`: what an outer reader adds
// ("nodes.yaml: items[3] (node a): ") to an inner one's. The path stays
// the inner reader's (a field of the Node).
inline Problem with_context(const std::string& prefix, Problem problem) {
  problem.message.insert(0, prefix);
  return problem;
}

}  // namespace gpusizer
