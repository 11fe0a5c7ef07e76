// The readers on the real datasets, checked against their published facts: counts per class, the first test
// labels, per-channel means. Data folders are found by tests/common/environment.h ($CIFAR10_DIR / $MNIST_DIR,
// .gpu-data/merged or shared/data); the tests skip with a message where a dataset is absent.

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/cifar10.h"
#include "data/idx.h"
#include "tests/common/environment.h"

namespace engine::data {
namespace {

std::vector<std::int64_t> class_counts(const Dataset& d) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(d.num_classes()), 0);
  for (const auto label : d.labels) ++counts[static_cast<std::size_t>(label)];
  return counts;
}

TEST(RealDatasets, Cifar10TrainHas5000PerClassAndTheOfficialMeans) {
  const std::string root = engine::testing::cifar10_dir();
  if (root.empty()) GTEST_SKIP() << "CIFAR-10 not found: set CIFAR10_DIR (tests/common/environment.h)";
  const Dataset d = load_cifar10(root, Split::Train);
  ASSERT_EQ(d.size(), 50000);
  EXPECT_EQ(class_counts(d), std::vector<std::int64_t>(10, 5000));
  EXPECT_EQ(d.class_names, cifar10_class_names());
  std::array<std::uint64_t, 3> sums{};
  for (std::int64_t i = 0; i < d.size(); ++i) {
    const std::uint8_t* im = d.image(i);
    for (int c = 0; c < 3; ++c) {
      std::uint64_t s = 0;
      for (int p = 0; p < 1024; ++p) s += im[c * 1024 + p];
      sums[static_cast<std::size_t>(c)] += s;
    }
  }
  const double n = 50000.0 * 1024.0;
  EXPECT_NEAR(static_cast<double>(sums[0]) / n, 125.3069, 1e-3);
  EXPECT_NEAR(static_cast<double>(sums[1]) / n, 122.9504, 1e-3);
  EXPECT_NEAR(static_cast<double>(sums[2]) / n, 113.8654, 1e-3);
}

TEST(RealDatasets, Cifar10TestHas1000PerClassAndTheOfficialFirstLabels) {
  const std::string root = engine::testing::cifar10_dir();
  if (root.empty()) GTEST_SKIP() << "CIFAR-10 not found: set CIFAR10_DIR (tests/common/environment.h)";
  const Dataset d = load_cifar10(root, Split::Test);
  ASSERT_EQ(d.size(), 10000);
  EXPECT_EQ(class_counts(d), std::vector<std::int64_t>(10, 1000));
  // test_batch.bin's first ten label bytes (cat ship ship airplane frog frog automobile frog cat automobile).
  EXPECT_EQ(std::vector<std::int32_t>(d.labels.begin(), d.labels.begin() + 10),
            (std::vector<std::int32_t>{3, 8, 8, 0, 6, 6, 1, 6, 3, 1}));
}

TEST(RealDatasets, MnistHasTheOfficialCounts) {
  const std::string root = engine::testing::mnist_dir();
  if (root.empty()) GTEST_SKIP() << "MNIST not found: set MNIST_DIR (tests/common/environment.h)";
  const Dataset train = load_mnist(root, Split::Train);
  ASSERT_EQ(train.size(), 60000);
  EXPECT_EQ(train.height, 28);
  EXPECT_EQ(train.width, 28);
  EXPECT_EQ(class_counts(train),
            (std::vector<std::int64_t>{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}));
  std::uint64_t sum = 0;
  for (const auto v : train.images) sum += v;
  EXPECT_NEAR(static_cast<double>(sum) / static_cast<double>(train.images.size()), 33.318, 1e-3);
  const Dataset test = load_mnist(root, Split::Test);
  ASSERT_EQ(test.size(), 10000);
  EXPECT_EQ(class_counts(test),
            (std::vector<std::int64_t>{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}));
}

TEST(RealDatasets, FashionMnistFromTheDebianPackage) {
  if (!std::filesystem::exists(kFashionMnistDebianDir)) {
    GTEST_SKIP() << kFashionMnistDebianDir << " not found: apt-get install dataset-fashion-mnist";
  }
  const Dataset train = load_fashion_mnist("", Split::Train);
  ASSERT_EQ(train.size(), 60000);
  EXPECT_EQ(class_counts(train), std::vector<std::int64_t>(10, 6000));
  EXPECT_EQ(train.class_names[9], "Ankle boot");
  const Dataset test = load_fashion_mnist("", Split::Test);
  ASSERT_EQ(test.size(), 10000);
  EXPECT_EQ(class_counts(test), std::vector<std::int64_t>(10, 1000));
}

}  // namespace
}  // namespace engine::data
