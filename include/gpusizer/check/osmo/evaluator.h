// The evaluator of the Jinja expression subset: an expression tree
// (parser.h) and the template's variables in, the value Jinja would write,
// or why there is none, out. Arithmetic and filters follow Python and Jinja
// (// floors, % takes the divisor's sign, |int of "4.5" is 4, |max of a
// list...); what differs from them is not evaluated, never guessed.
#pragma once

#include <string>

#include "gpusizer/check/osmo/parser.h"
#include "gpusizer/check/osmo/values.h"

namespace gpusizer::osmo {

struct Evaluated {
  enum class Outcome {
    kValue,        // `value` is what Jinja writes (through py_str)
    kUndefined,    // `detail` names a variable with no value: OSMO fails the submit
    kUnevaluable,  // `detail` says why check cannot evaluate it ("division by zero")
  };
  Outcome outcome = Outcome::kValue;
  Value value;
  std::string detail;
};

// Python's truth of a value, as {% if %}, `and`, `or` and `not` take it:
// false for none, false, 0, 0.0 and empty texts, lists and dicts.
bool truthy(const Value& v);

// Evaluates left to right, as Jinja does; the first variable with no value
// or part it cannot evaluate ends it.
Evaluated evaluate(const Expression& expression, const Variables& variables);

// Scans, parses and evaluates an expression's text, with its plain
// variable (parser.h). A text that does not scan is kUnevaluable.
struct EvaluatedText {
  Evaluated evaluated;
  std::string plain_variable;
};
EvaluatedText evaluate_text(std::string_view expression, const Variables& variables);

}  // namespace gpusizer::osmo
