// One webhook for every test of a GoogleTest suite.
#pragma once

#include <gtest/gtest.h>

#include "integration/webhook_process.h"

namespace gpusizer::testing {

// Started before the suite's first test, stopped after its last.
class SharedWebhookTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { webhook_ = new WebhookProcess(); }
  static void TearDownTestSuite() {
    delete webhook_;
    webhook_ = nullptr;
  }
  inline static WebhookProcess* webhook_ = nullptr;
};

}  // namespace gpusizer::testing
