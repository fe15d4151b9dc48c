// What the fuzz targets share: a broken invariant prints what broke and
// aborts, which libFuzzer records as a crash and saves with its input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace gpusizer::fuzz {

[[noreturn]] inline void fail(std::string_view invariant, std::string_view detail = {}) {
  std::fprintf(stderr, "invariant failed: %.*s\n%.*s\n", static_cast<int>(invariant.size()), invariant.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace gpusizer::fuzz
