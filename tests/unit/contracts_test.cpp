// The REQUIRES contracts (util/contract.h) abort, naming the condition,
// in the builds that check them: debug, the sanitizer builds (CI's ASan
// run) and the fuzzers. The release checks none, so the plain RelWithDebInfo
// build skips these.
#include <gtest/gtest.h>

#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/contract.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/result.h"
#include "gpusizer/util/strings.h"

namespace gpusizer::contracts_test {
namespace {

class Contracts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GPU_SIZER_CONTRACTS_CHECKED) GTEST_SKIP() << "contracts are checked in debug and sanitizer builds only";
    // Fork and run the statement alone: the suite's other threads (none
    // here, but the sanitizers') stay out of the child.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(Contracts, AFailureResultMadeOfAnOkStatusAborts) {
  EXPECT_DEATH(Result<int>{Status{}}, "REQUIRES !std::get<Status>\\(state_\\).ok\\(\\) does not hold");
}

TEST_F(Contracts, ArithmeticOutsideItsDomainAborts) {
  EXPECT_DEATH(floor_div(7, 0), "REQUIRES divisor > 0");
  EXPECT_DEATH(printable("abcdef", 2), "REQUIRES max_bytes >= 3");
}

TEST_F(Contracts, SizingWithoutGpusAborts) {
  const Profile& train = *default_policy().find_profile("train");
  EXPECT_DEATH(required_resources(train, 0), "REQUIRES gpus >= 1");
  EXPECT_DEATH(extend_row(train, train.table.back(), train.table.back().gpus - 1), "REQUIRES gpus >= row.gpus");
}

}  // namespace
}  // namespace gpusizer::contracts_test
