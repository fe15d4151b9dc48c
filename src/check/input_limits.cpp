#include "gpusizer/check/input_limits.h"

#include <iostream>

namespace gpusizer {

YamlBounds InputLimits::yaml_bounds() const { return YamlBounds{max_yaml_nodes, kMaxManifestDepth, kMaxYamlNodesFlag}; }

Result<std::string> read_input(const std::string& path, const InputLimits& limits) {
  if (path == "-") return read_stream(std::cin, "stdin", limits.max_file_bytes, kMaxFileBytesFlag);
  return read_file(path, limits.max_file_bytes, kMaxFileBytesFlag);
}

}  // namespace gpusizer
