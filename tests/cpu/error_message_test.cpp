// engine::Error's message: what the user reads comes first, the source location after it, relative to the
// source tree (issue 28: "<clone>/data/cifar10.cpp:177: CIFAR-10: ..." led with a developer's detail).
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"

namespace engine {
namespace {

TEST(ErrorMessage, TheMessageComesFirstAndTheLocationAfter) {
  const int line = __LINE__ + 2;
  try {
    ENGINE_CHECK(1 + 1 == 3, "CIFAR-10: {} does not exist", "/nowhere");
    FAIL() << "ENGINE_CHECK did not throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what, "CIFAR-10: /nowhere does not exist [at tests/cpu/error_message_test.cpp:" +
                        std::to_string(line) + "]");
    EXPECT_EQ(e.line(), line);
    EXPECT_NE(std::string(e.file()).find("error_message_test.cpp"), std::string::npos);
  }
}

TEST(ErrorMessage, TheLocationIsRelativeToTheSourceTree) {
  // However the build names the file: absolute (a clone's path) or relative to the build folder (ccache).
  const std::string self = Error("x", __FILE__, 1).what();
  EXPECT_EQ(self, "x [at tests/cpu/error_message_test.cpp:1]");
  EXPECT_EQ(std::string(Error("m", "../data/cifar10.cpp", 177).what()), "m [at data/cifar10.cpp:177]");
  EXPECT_EQ(std::string(Error("m", "data/cifar10.cpp", 177).what()), "m [at data/cifar10.cpp:177]");
}

}  // namespace
}  // namespace engine
