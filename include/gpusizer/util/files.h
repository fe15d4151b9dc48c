// Reading whole files: the policy, certificates and the manifests `check` reads.
#pragma once

#include <string>

#include "gpusizer/util/result.h"

namespace gpusizer {

// Reads a whole file; fails naming the path and the system error.
Result<std::string> read_file(const std::string& path);

}  // namespace gpusizer
