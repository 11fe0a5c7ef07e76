#pragma once
// The datasets of a training run: the train and test splits read by name, cut to --limit-train/--limit-test,
// with the per-channel normalization the network input uses.
//
//   cifar10, mnist, fashion-mnist: the official splits (data/cifar10.h, data/idx.h), normalized with their
//                                  usual published mean/std
//   folder:PATH                    PATH/train and PATH/test, one sub-folder per class (data/image_folder.h),
//                                  decoded to RGB 32x32; normalized with the mean/std of the training images

#include <string>
#include <vector>

#include "apps/train_config.h"
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

// The test split alone, for --eval-only (same limits and normalization).
TrainData load_test_data(const TrainConfig& config);

}  // namespace engine::apps
