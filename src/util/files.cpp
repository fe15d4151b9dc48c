#include "gpusizer/util/files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpusizer {

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::io_error("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::io_error("cannot read " + path + ": " + std::strerror(errno));
  return text.str();
}

}  // namespace gpusizer
