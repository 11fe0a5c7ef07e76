#include "apps/train/train_data.h"

#include <filesystem>

#include <fmt/format.h>

#include "apps/train/dataset_catalog.h"
#include "core/error.h"
#include "data/transforms.h"

namespace engine::apps {

namespace {

// Keeps the first n samples (official order); n = 0 keeps all.
void limit(data::Dataset& d, std::int64_t n, const char* flag, const std::string& what) {
  if (n == 0) return;
  ENGINE_CHECK(n <= d.size(), "{} {}: the {} set has only {} samples", flag, n, what, d.size());
  d.labels.resize(static_cast<std::size_t>(n));
  if (!d.on_disk()) d.images.resize(static_cast<std::size_t>(n * d.image_bytes()));
}

// A folder's split read from disk; training's geometry is RandomResizedCrop under --augment crop-flip,
// else evaluation's (resize and center crop, what flip-translate then translates).
data::Dataset load_split(const DatasetEntry& dataset, const std::string& root, data::Split split,
                         const TrainConfig& c, const std::vector<std::string>* classes) {
  if (dataset.load_folder == nullptr) return dataset.load(root, split);
  data::DiskImageOptions o;
  o.image_size = c.image_size;
  o.resize = c.resize;
  o.random_resized_crop = split == data::Split::Train && c.augment == Augment::CropFlip;
  o.seed = c.seed;
  o.skip_bad_images = c.skip_bad_images;
  return dataset.load_folder(root, split, o, classes);
}

void set_normalization(const DatasetEntry& dataset, TrainData& t) {
  if (!dataset.mean.empty()) {
    t.mean = dataset.mean;
    t.std = dataset.std;
    return;
  }
  const data::ChannelStats stats = data::channel_mean_std(t.train.size() > 0 ? t.train : t.test);
  t.mean = stats.mean;
  t.std = stats.std;
}

// A dataset cnn_train can fetch whose folder is missing or empty: said with --download (issue 44), before the
// reader names the first file it lacks.
void check_present(const DatasetEntry& dataset, const std::string& root, const TrainConfig& c) {
  std::error_code error;
  if (!dataset.downloadable() || c.download) return;
  const bool missing = !std::filesystem::is_directory(root, error) || std::filesystem::is_empty(root, error);
  ENGINE_CHECK(!missing, "{}: {} {} (--data-dir, or the default folder): add --download to fetch it there",
               c.dataset, root,
               std::filesystem::exists(root, error) ? "is empty or not a folder" : "does not exist");
}

}  // namespace

TrainData load_train_data(const TrainConfig& c) {
  const DatasetEntry& dataset = dataset_entry(c.dataset);
  const std::string root = dataset_root(c.dataset, c.data_dir);
  check_present(dataset, root, c);
  TrainData t;
  t.train = load_split(dataset, root, data::Split::Train, c, nullptr);
  t.test = load_split(dataset, root, data::Split::Test, c, &t.train.class_names);
  const std::int64_t full_train = t.train.size(), full_test = t.test.size();
  limit(t.train, c.limit_train, "--limit-train", "training");
  limit(t.test, c.limit_test, "--limit-test", "test");
  ENGINE_CHECK(c.batch_size <= t.train.size() / c.world_size,
               "--batch-size {} is larger than the training set ({} samples{})", c.batch_size, t.train.size(),
               c.world_size > 1 ? fmt::format(" over {} processes", c.world_size) : std::string());
  set_normalization(dataset, t);
  t.description = fmt::format("{} from {} ({} of {} train, {} of {} test)", c.dataset, root, t.train.size(),
                              full_train, t.test.size(), full_test);
  return t;
}

TrainData load_test_data(const TrainConfig& c, const std::vector<float>& mean,
                         const std::vector<float>& std) {
  const DatasetEntry& dataset = dataset_entry(c.dataset);
  const std::string root = dataset_root(c.dataset, c.data_dir);
  check_present(dataset, root, c);
  TrainData t;
  if (dataset.mean.empty())
    t.train = load_split(dataset, root, data::Split::Train, c, nullptr);  // statistics
  t.test =
      load_split(dataset, root, data::Split::Test, c, t.train.size() > 0 ? &t.train.class_names : nullptr);
  const std::int64_t full_test = t.test.size();
  limit(t.test, c.limit_test, "--limit-test", "test");
  if (!mean.empty() && std::ssize(mean) == t.test.channels && mean.size() == std.size()) {
    t.mean = mean;
    t.std = std;
  } else {
    set_normalization(dataset, t);
  }
  t.train = data::Dataset();
  t.description = fmt::format("{} from {} ({} of {} test)", c.dataset, root, t.test.size(), full_test);
  return t;
}

}  // namespace engine::apps
