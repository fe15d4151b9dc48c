// Reading whole files and streams, bounded: the policy, certificates, and
// the manifests, --nodes files and stdin `check` reads. One reader, so a
// device (/dev/zero), a FIFO or an endless pipe costs at most the limit.
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <string_view>

#include "gpusizer/util/result.h"

namespace gpusizer {

// The most a file is read whole unless the caller says otherwise: a large
// rendered Helm chart or Argo install is a few MB, a policy or a
// certificate a few KB.
inline constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;

// Reads a whole file, or fails naming the path and the system error. Never
// reads more than max_bytes + 1 bytes, whatever the file is: a regular
// file's size is checked before reading, and anything else (a FIFO, a
// device, a file that grows meanwhile) is cut off there. Past max_bytes it
// fails with "PATH: larger than N bytes", followed by " (RAISE_WITH)" when
// raise_with (the flag that raises the limit) is not empty.
Result<std::string> read_file(const std::string& path, std::size_t max_bytes = kMaxFileBytes,
                              std::string_view raise_with = "");

// The same for an open stream (stdin), `name` standing for the path in
// errors.
Result<std::string> read_stream(std::istream& in, const std::string& name, std::size_t max_bytes,
                                std::string_view raise_with = "");

}  // namespace gpusizer
