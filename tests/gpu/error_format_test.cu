// ENGINE_CHECK inside a .cu file uses the run-time formatter (core/error.h). Needs no device.
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"

namespace engine {
namespace {

TEST(CudaTranslationUnit, CheckMessagesAreFormattedAtRunTime) {
  try {
    const int k = 7;
    ENGINE_CHECK(k < 5, "kernel {} larger than {:.2f} by {} ({})", k, 5.0, k - 5, std::string("conv"));
    FAIL() << "ENGINE_CHECK did not throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("error_format_test.cu:"), std::string::npos) << what;
    EXPECT_NE(what.find("kernel 7 larger than 5 by 2 (conv)"), std::string::npos) << what;
  }
}

TEST(CudaTranslationUnit, ExtraArgumentsAndBracesAreKept) {
  EXPECT_EQ(detail::format_message("no placeholders", 1, 2), "no placeholders 1 2");
  EXPECT_EQ(detail::format_message("{} and {}", 1), "1 and {}");
}

}  // namespace
}  // namespace engine
