// --recipe airbench94 learns on the CPU: cnn_train with the recipe (airbench's net, schedule, groups,
// lookahead, flip-translate, label smoothing) on the first N CIFAR-10 training images and the first
// M test images (kTrainImages, kTestImages), a smaller batch (the recipe scales the rate with it) and few
// epochs, so that it fits in about a minute of CI's 2 cores. Chance is 10%; the bar is set well above it (see
// kMinimumAccuracy) and below what the run reaches (the figure measured when the test was written is beside
// it). Skipped, saying so, where CIFAR-10 is absent (tests/common/environment.h).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "tests/common/environment.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

// The subset and the run (see the file's comment).
// 1,000 training images, 3 epochs of 20 steps at batch 50 (lr 1.5 * 50/1024): about 60 s of one core.
const std::string kTrainImages = "1000", kTestImages = "250", kBatch = "50", kEpochs = "3";
// Measured when written (seed 1): 36.4% (epochs 21.6%, 34.8%, 36.4%). Chance is 10%, and with 250 test images
// one standard error is about 3 points: 25% is 7 standard errors above chance and 3-4 below the measured run.
constexpr double kMinimumAccuracy = 25.0;

// The number in the last line, "Test Acc: 90.50%"; -1 when the output does not end so.
double final_test_accuracy(const std::string& output) {
  const std::string key = "\nTest Acc: ";
  const std::size_t at = output.rfind(key);
  if (at == std::string::npos || output.size() < 2 || output.substr(output.size() - 2) != "%\n") return -1.0;
  return std::strtod(output.c_str() + at + key.size(), nullptr);
}

TEST(CnnTrainRecipe, Airbench94LearnsACifar10Subset) {
  const std::string root = engine::testing::cifar10_dir();
  if (root.empty()) GTEST_SKIP() << "CIFAR-10 not found: set CIFAR10_DIR (tests/common/environment.h)";
  const auto start = std::chrono::steady_clock::now();
  const testing::RunResult r =
      testing::run_train({"--cpu", "--dataset", "cifar10", "--data-dir", root, "--recipe", "airbench94",
                          "--limit-train", kTrainImages, "--limit-test", kTestImages, "--batch-size", kBatch,
                          "--epochs", kEpochs, "--seed", "1", "--checkpoint-dir", ""});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Batchsize: " + kBatch), std::string::npos) << r.output;
  const double acc = final_test_accuracy(r.output);
  EXPECT_GE(acc, kMinimumAccuracy) << r.output;
  std::printf("airbench94 recipe on the CIFAR-10 subset: %.2f%% test accuracy in %.1f s\n%s", acc, seconds,
              r.output.c_str());
}

}  // namespace
}  // namespace engine::apps
