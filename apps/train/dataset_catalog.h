#pragma once
// The datasets cnn_train and cnn_data know, one entry each: how the name is written, where the files are by
// default, which reader reads a split, the normalization, whether --download can fetch it, and cnn_train's
// default model for it. Adding a dataset is adding one entry to the table in dataset_catalog.cpp (and, when
// it is downloadable, its files to data/download.cpp); the flags' checks, help texts and errors follow from
// it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"
#include "data/disk_images.h"
#include "data/split.h"

namespace engine::apps {

struct DatasetEntry {
  std::string_view name;  // --dataset NAME; for an entry with folder_in_name the prefix "folder:"
  // --dataset folder:PATH: the files are under PATH (PATH/train, PATH/test) and --data-dir is not used.
  bool folder_in_name = false;
  std::string (*default_root)() = nullptr;  // the folder without --data-dir (entries without folder_in_name)
  std::string (*default_root_help)() = nullptr;  // where that is, as --data-dir's help says it
  data::Dataset (*load)(const std::string& root, data::Split split) = nullptr;  // in memory; null for folders
  // folder:PATH: the split's files, read from disk as `options` say; `classes`: the training split's class
  // names, which the test split's are matched to by name (null when reading the training split).
  data::Dataset (*load_folder)(const std::string& root, data::Split split,
                               const data::DiskImageOptions& options,
                               const std::vector<std::string>* classes) = nullptr;
  std::vector<float> mean = {};  // per channel, in units of x / 255; empty: those of the training images
  std::vector<float> std = {};
  // Empty: --download fetches it (data/download.h has its files); else why it cannot be downloaded.
  std::string_view not_downloadable_because = {};
  std::string_view default_model = {};  // its batch size and rate: apps/train/model_defaults.h

  bool downloadable() const { return not_downloadable_because.empty(); }
};

// Every entry, in the order the help texts list them (the folder:PATH entry last).
const std::vector<DatasetEntry>& dataset_catalog();

// The entry `name` selects (folder:PATH selects the folder entry), or null.
const DatasetEntry* find_dataset(std::string_view name);

// As find_dataset; throws engine::Error naming `name` and the known ones when there is none.
const DatasetEntry& dataset_entry(std::string_view name);

// The folder dataset `name` is read from: PATH for folder:PATH, else `data_dir`, else the entry's default.
std::string dataset_root(std::string_view name, const std::string& data_dir);

// A folder dataset's split: ROOT/train (or ROOT/train.csv, a file list, when there is no ROOT/train folder),
// ROOT/test likewise.
std::string folder_split_path(const std::string& root, data::Split split);

// "cifar10, mnist, fashion-mnist or folder:PATH"
std::string dataset_names();

// The names --download accepts: {"cifar10", "mnist"}.
std::vector<std::string> downloadable_dataset_names();

// "a", "a and b", "a, b and c" (with last_separator " and ").
std::string join_names(const std::vector<std::string>& items, std::string_view last_separator);

// --data-dir's defaults: "$CIFAR10_DIR, else ~/.cache/cnn_engine/cifar10; $MNIST_DIR, else ...; ..." (the
// cache folder resolved, data/data_home.h).
std::string default_roots_help();

// A per-dataset default in help texts: "mnist_cnn for mnist and fashion-mnist, vgg6 otherwise" (the folder
// entry's value is "otherwise"). `value` renders an entry's default.
std::string defaults_by_dataset(std::string (*value)(const DatasetEntry&));

}  // namespace engine::apps
