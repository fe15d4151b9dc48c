// Shared by the OSMO workflow tests (osmo_workflow_test.cpp and
// osmo_workflow_shapes_test.cpp): the fixtures under tests/data/osmo, the
// whole check run on a spec with --set values, and finders for its report.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "gpusizer/check/osmo_workflow.h"
#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "support/text_support.h"

namespace gpusizer::osmo_workflow_test {

using Sets = std::map<std::string, std::string>;

inline constexpr int64_t kGi = int64_t{1} << 30;

inline Quantity cores(int64_t n) { return Quantity::from_milli(n * 1000); }
inline Quantity gibibytes(int64_t n) { return Quantity::from_bytes(n * kGi); }

inline std::filesystem::path source_dir() {
#ifdef GPU_SIZER_SOURCE_DIR
  return GPU_SIZER_SOURCE_DIR;
#else
  // tests/support/<this file> -> the source tree (relative when __FILE__ is).
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
#endif
}

inline std::string fixture(const std::string& name) {
  const auto path = source_dir() / "tests" / "data" / "osmo" / name;
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path;
    return "";
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline OsmoReport check(const std::string& text, const Sets& sets = {}, bool strict = false) {
  auto result = check_osmo_workflow(default_policy(), text, sets, strict);
  EXPECT_TRUE(result.ok()) << result.error();
  return result.ok() ? result.value() : OsmoReport{};
}

inline std::string check_error(const std::string& text, const Sets& sets = {}, bool strict = false) {
  auto result = check_osmo_workflow(default_policy(), text, sets, strict);
  EXPECT_FALSE(result.ok()) << osmo_report_text("spec", result.value());
  return result.ok() ? "" : result.error();
}

inline const OsmoBlockReport* find_block(const OsmoReport& report, const std::string& name) {
  for (const OsmoBlockReport& block : report.blocks) {
    if (block.block == name) return &block;
  }
  ADD_FAILURE() << "no block " << name;
  return nullptr;
}

// "a=1 b=2" -> {a: 1, b: 2}, as the shell would pass them to --set.
inline Sets parse_set_line(const std::string& line) {
  Sets sets;
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    const auto equals = word.find('=');
    if (equals != std::string::npos) sets[word.substr(0, equals)] = word.substr(equals + 1);
  }
  return sets;
}

using testing::contains;

// The 1-based line of the first line containing `part`.
inline int line_of(const std::string& text, const std::string& part) {
  const auto at = text.find(part);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no " << part;
    return 0;
  }
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

}  // namespace gpusizer::osmo_workflow_test
