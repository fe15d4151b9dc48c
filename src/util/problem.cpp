#include "gpusizer/util/problem.h"

namespace gpusizer {

std::string_view to_string(ProblemCode code) {
  switch (code) {
    case ProblemCode::kSyntax: return "syntax";
    case ProblemCode::kWrongType: return "wrong_type";
    case ProblemCode::kBadValue: return "bad_value";
    case ProblemCode::kUnknownField: return "unknown_field";
    case ProblemCode::kDuplicateField: return "duplicate_field";
    case ProblemCode::kMissingField: return "missing_field";
    case ProblemCode::kUnknownName: return "unknown_name";
    case ProblemCode::kInconsistent: return "inconsistent";
    case ProblemCode::kTooLarge: return "too_large";
    case ProblemCode::kUnresolved: return "unresolved";
    case ProblemCode::kIo: return "io";
  }
  return "bad_value";
}

}  // namespace gpusizer
