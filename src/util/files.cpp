#include "gpusizer/util/files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace gpusizer {

namespace {

// Bytes read at a time.
constexpr std::size_t kReadBytes = std::size_t{64} << 10;

Status too_large(const std::string& name, std::size_t max_bytes, std::string_view raise_with) {
  std::string message = name + ": larger than " + std::to_string(max_bytes) + " bytes";
  if (!raise_with.empty()) message += " (" + std::string(raise_with) + ")";
  return Status::failure(ProblemCode::kTooLarge, "", std::move(message));
}

// The first capacity for a stream of unknown size: the cap halved until it
// is about kReadBytes, so that doubling it reaches the cap exactly. The
// last growth then holds the cap, not twice it (the old half is copied
// into the new buffer and freed).
std::size_t first_capacity(std::size_t cap) {
  std::size_t capacity = cap;
  while (capacity > kReadBytes) capacity = (capacity + 1) / 2;
  return capacity;
}

// Reads `in` to its end, or to max_bytes + 1 bytes: the byte that proves
// it too large. expected_size (0: unknown) is the size to reserve first,
// so a regular file is read into one buffer of its size.
Result<std::string> read_to_end(std::istream& in, const std::string& name, std::size_t max_bytes,
                                std::string_view raise_with, std::size_t expected_size) {
  const std::size_t cap = max_bytes + 1;
  std::string text;
  text.reserve(expected_size > 0 ? std::min(cap, expected_size + 1) : first_capacity(cap));
  std::string buffer(kReadBytes, '\0');
  while (text.size() < cap && in) {
    in.read(buffer.data(), static_cast<std::streamsize>(std::min(buffer.size(), cap - text.size())));
    const auto read = static_cast<std::size_t>(in.gcount());
    if (text.size() + read > text.capacity()) {
      text.reserve(std::min(cap, std::max(text.capacity() * 2, text.size() + read)));
    }
    text.append(buffer.data(), read);
  }
  if (in.bad()) return Status::io_error("cannot read " + name + ": " + std::strerror(errno));
  if (text.size() > max_bytes) return too_large(name, max_bytes, raise_with);
  return text;
}

}  // namespace

Result<std::string> read_file(const std::string& path, std::size_t max_bytes, std::string_view raise_with) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::io_error("cannot read " + path + ": " + std::strerror(errno));
  std::error_code error;
  std::size_t expected_size = 0;
  if (std::filesystem::is_regular_file(path, error)) {
    const auto size = std::filesystem::file_size(path, error);
    if (!error && size > max_bytes) return too_large(path, max_bytes, raise_with);
    if (!error) expected_size = static_cast<std::size_t>(size);
  }
  return read_to_end(in, path, max_bytes, raise_with, expected_size);
}

Result<std::string> read_stream(std::istream& in, const std::string& name, std::size_t max_bytes,
                                std::string_view raise_with) {
  return read_to_end(in, name, max_bytes, raise_with, 0);
}

}  // namespace gpusizer
