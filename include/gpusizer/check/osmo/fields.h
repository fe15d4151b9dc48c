// A resource field of an OSMO workflow (cpu, gpu, memory, storage): where
// its value comes from (written in the file, one variable, an expression)
// and the values OSMO takes for it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gpusizer/check/osmo/renderer.h"
#include "gpusizer/check/osmo_workflow.h"

namespace gpusizer::osmo {

// The source of a field, from its value in the marked rendering (where
// each expression is its marker): a literal when it holds none; a variable
// when it is exactly one plain-variable expression, evaluated, followed by
// nothing or (allow_unit) a binary unit ("{{mem}}Gi"); else an expression,
// written back as in the file, unevaluated when any part of it was.
OsmoFieldSource field_source(const std::string& marked_value, const Rendered& rendered, bool allow_unit);

// The binary units OSMO takes for memory and storage, smallest first.
inline constexpr const char* kBinaryUnits[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

// Bytes in a binary unit ("Gi": 2^30); 0 for anything else.
int64_t unit_bytes(std::string_view unit);

// A plain number of cores, as OSMO takes cpu: digits with at most one point.
bool is_cpu_number(std::string_view text);

// NAME=VALUE for a --set line, the value shell-quoted when a shell would
// treat any of it specially.
std::string shell_pair(const std::string& name, const std::string& value);

}  // namespace gpusizer::osmo
