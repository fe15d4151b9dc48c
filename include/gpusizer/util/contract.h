// REQUIRES contracts: what a function's comment says its caller must
// ensure, checked where checking costs users nothing: debug builds (no
// NDEBUG), the sanitizer builds and the fuzzers (GPU_SIZER_CONTRACTS, set by
// CMake), never the release. A broken one is a programming error, never
// bad input: the process aborts naming the condition, file and line.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace gpusizer {

[[noreturn]] inline void contract_broken(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: REQUIRES %s does not hold\n", file, line, condition);
  std::abort();
}

}  // namespace gpusizer

#if !defined(NDEBUG) || defined(GPU_SIZER_CONTRACTS)
#define GPU_SIZER_REQUIRE(condition) \
  ((condition) ? static_cast<void>(0) : ::gpusizer::contract_broken(#condition, __FILE__, __LINE__))
#define GPU_SIZER_CONTRACTS_CHECKED 1
#else
#define GPU_SIZER_REQUIRE(condition) static_cast<void>(0)
#define GPU_SIZER_CONTRACTS_CHECKED 0
#endif
