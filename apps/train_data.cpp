#include "apps/train_data.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "data/cifar10.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/transforms.h"

namespace engine::apps {

namespace {

constexpr const char* kFolderPrefix = "folder:";
constexpr int kFolderSize = 32;  // folder datasets are decoded to RGB 32x32: the input of vgg6/cnn3/resnet18

std::string folder_root(const std::string& dataset) {
  return dataset.substr(std::string(kFolderPrefix).size());
}

data::Dataset load_split(const TrainConfig& c, data::Split split, std::string& root) {
  if (c.dataset == "cifar10") {
    root = c.data_dir.empty() ? data::default_cifar10_root() : c.data_dir;
    return data::load_cifar10(root, split);
  }
  if (c.dataset == "mnist") {
    root = c.data_dir.empty() ? data::default_mnist_root() : c.data_dir;
    return data::load_mnist(root, split);
  }
  if (c.dataset == "fashion-mnist") {
    root = c.data_dir.empty() ? data::kFashionMnistDebianDir : c.data_dir;
    return data::load_fashion_mnist(root, split);
  }
  root = folder_root(c.dataset);
  const std::string sub = (std::filesystem::path(root) / data::split_name(split)).string();
  return data::load_image_folder(sub, 3, kFolderSize, kFolderSize);
}

// Keeps the first n samples (official order); n = 0 keeps all.
void limit(data::Dataset& d, std::int64_t n, const char* flag, const std::string& what) {
  if (n == 0) return;
  ENGINE_CHECK(n <= d.size(), "{} {}: the {} set has only {} samples", flag, n, what, d.size());
  d.labels.resize(static_cast<std::size_t>(n));
  d.images.resize(static_cast<std::size_t>(n * d.image_bytes()));
}

void set_normalization(const TrainConfig& c, TrainData& t) {
  if (c.dataset == "cifar10") {
    t.mean = {0.4914f, 0.4822f, 0.4465f};
    t.std = {0.2470f, 0.2435f, 0.2616f};
  } else if (c.dataset == "mnist") {
    t.mean = {0.1307f};
    t.std = {0.3081f};
  } else if (c.dataset == "fashion-mnist") {
    t.mean = {0.2860f};
    t.std = {0.3530f};
  } else {
    const data::ChannelStats stats = data::channel_mean_std(t.train.size() > 0 ? t.train : t.test);
    t.mean = stats.mean;
    t.std = stats.std;
  }
}

}  // namespace

TrainData load_train_data(const TrainConfig& c) {
  TrainData t;
  std::string root;
  t.train = load_split(c, data::Split::Train, root);
  t.test = load_split(c, data::Split::Test, root);
  const std::int64_t full_train = t.train.size(), full_test = t.test.size();
  limit(t.train, c.limit_train, "--limit-train", "training");
  limit(t.test, c.limit_test, "--limit-test", "test");
  ENGINE_CHECK(c.batch_size <= t.train.size() / c.world_size,
               "--batch-size {} is larger than the training set ({} samples{})", c.batch_size, t.train.size(),
               c.world_size > 1 ? fmt::format(" over {} processes", c.world_size) : std::string());
  set_normalization(c, t);
  t.description = fmt::format("{} from {} ({} of {} train, {} of {} test)", c.dataset, root, t.train.size(),
                              full_train, t.test.size(), full_test);
  return t;
}

TrainData load_test_data(const TrainConfig& c) {
  TrainData t;
  std::string root;
  t.test = load_split(c, data::Split::Test, root);
  const std::int64_t full_test = t.test.size();
  limit(t.test, c.limit_test, "--limit-test", "test");
  if (c.dataset.rfind(kFolderPrefix, 0) == 0) t.train = load_split(c, data::Split::Train, root);
  set_normalization(c, t);
  t.train = data::Dataset();
  t.description = fmt::format("{} from {} ({} of {} test)", c.dataset, root, t.test.size(), full_test);
  return t;
}

}  // namespace engine::apps
