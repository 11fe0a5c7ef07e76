#pragma once
// The datasets of a training run: the train and test splits of the --dataset entry of the catalog
// (apps/train/dataset_catalog.h: where the files are, which reader, the normalization), cut to
// --limit-train/--limit-test.

#include <string>
#include <vector>

#include "apps/train/train_config.h"
#include "data/dataset.h"

namespace engine::apps {

struct TrainData {
  data::Dataset train;
  data::Dataset test;
  std::vector<float> mean;  // per channel, in units of x / 255
  std::vector<float> std;
  std::string description;  // "mnist from /path (2000 of 60000 train, 1000 of 10000 test)"
};

// Throws engine::Error naming the file or the flag: unreadable data, a limit larger than the split, a batch
// size larger than the training set.
TrainData load_train_data(const TrainConfig& config);

// The test split alone, for --eval-only (same limits and normalization). A `mean` and `std` given (a
// checkpoint's, of the dataset's channel count) are the normalization instead of the dataset's statistics.
TrainData load_test_data(const TrainConfig& config, const std::vector<float>& mean = {},
                         const std::vector<float>& std = {});

}  // namespace engine::apps
