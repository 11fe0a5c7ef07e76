#include "apps/train/dataset_catalog.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "data/cifar10.h"
#include "data/data_home.h"
#include "data/file_list.h"
#include "data/idx.h"

namespace engine::apps {

namespace {

constexpr std::string_view kFolderPrefix = "folder:";

// Fashion-MNIST is not downloadable: Debian's package is its usual home, the cache folder is looked at first.
std::string fashion_mnist_root() {
  const std::string cache = data::user_data_dir("fashion-mnist");
  std::error_code ec;
  return std::filesystem::is_directory(cache, ec) ? cache : data::kFashionMnistDebianDir;
}

std::string cifar10_root_help() { return "$CIFAR10_DIR, else " + data::user_data_dir("cifar10"); }
std::string mnist_root_help() { return "$MNIST_DIR, else " + data::user_data_dir("mnist"); }
std::string fashion_mnist_root_help() {
  return data::user_data_dir("fashion-mnist") + " when it exists, else " + data::kFashionMnistDebianDir;
}

data::Dataset load_folder_split(const std::string& root, data::Split split,
                                const data::DiskImageOptions& options,
                                const std::vector<std::string>* classes) {
  return data::disk_image_dataset(data::list_images(folder_split_path(root, split), classes), options);
}

}  // namespace

std::string folder_split_path(const std::string& root, data::Split split) {
  const std::filesystem::path dir = std::filesystem::path(root) / data::split_name(split);
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return dir.string();
  const std::string csv = dir.string() + ".csv";
  return std::filesystem::is_regular_file(csv, ec) ? csv : dir.string();
}

std::string join_names(const std::vector<std::string>& items, std::string_view last_separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? std::string(last_separator) : ", ";
    out += items[i];
  }
  return out;
}

namespace {

std::string display_name(const DatasetEntry& e) {
  return e.folder_in_name ? std::string(e.name) + "PATH" : std::string(e.name);
}

}  // namespace

const std::vector<DatasetEntry>& dataset_catalog() {
  // The means and stds of the official sets are their usual published values (those of the training
  // images); a folder's are computed from its training images when it is loaded.
  static const std::vector<DatasetEntry> catalog = {
      {.name = "cifar10",
       .default_root = data::default_cifar10_root,
       .default_root_help = cifar10_root_help,
       .load = data::load_cifar10,
       .mean = {0.4914f, 0.4822f, 0.4465f},
       .std = {0.2470f, 0.2435f, 0.2616f},
       .default_model = "vgg6"},
      {.name = "mnist",
       .default_root = data::default_mnist_root,
       .default_root_help = mnist_root_help,
       .load = data::load_mnist,
       .mean = {0.1307f},
       .std = {0.3081f},
       .default_model = "mnist_cnn"},
      {.name = "fashion-mnist",
       .default_root = fashion_mnist_root,
       .default_root_help = fashion_mnist_root_help,
       .load = data::load_fashion_mnist,
       .mean = {0.2860f},
       .std = {0.3530f},
       .not_downloadable_because = "Fashion-MNIST comes from Debian (apt-get install dataset-fashion-mnist)",
       .default_model = "mnist_cnn"},
      {.name = kFolderPrefix,
       .folder_in_name = true,
       .load_folder = load_folder_split,
       .not_downloadable_because = "a folder:PATH dataset is yours to provide",
       .default_model = "vgg6"},
  };
  return catalog;
}

const DatasetEntry* find_dataset(std::string_view name) {
  for (const DatasetEntry& e : dataset_catalog()) {
    if (e.folder_in_name ? name.size() > e.name.size() && name.starts_with(e.name) : name == e.name)
      return &e;
  }
  return nullptr;
}

const DatasetEntry& dataset_entry(std::string_view name) {
  const DatasetEntry* e = find_dataset(name);
  ENGINE_CHECK(e != nullptr, "unknown dataset '{}': expected {}", name, dataset_names());
  return *e;
}

std::string dataset_root(std::string_view name, const std::string& data_dir) {
  const DatasetEntry& e = dataset_entry(name);
  if (e.folder_in_name) return std::string(name.substr(e.name.size()));
  return data_dir.empty() ? e.default_root() : data_dir;
}

std::string dataset_names() {
  std::vector<std::string> names;
  for (const DatasetEntry& e : dataset_catalog()) names.push_back(display_name(e));
  return join_names(names, " or ");
}

std::vector<std::string> downloadable_dataset_names() {
  std::vector<std::string> names;
  for (const DatasetEntry& e : dataset_catalog()) {
    if (e.downloadable()) names.push_back(display_name(e));
  }
  return names;
}

std::string default_roots_help() {
  std::string out;
  for (const DatasetEntry& e : dataset_catalog()) {
    if (e.default_root_help != nullptr) out += (out.empty() ? "" : "; ") + e.default_root_help();
  }
  return out;
}

std::string defaults_by_dataset(std::string (*value)(const DatasetEntry&)) {
  const std::vector<DatasetEntry>& all = dataset_catalog();
  const std::string otherwise = value(all.back());
  std::vector<std::string> groups;   // the values other than `otherwise`, in order of first appearance
  std::vector<std::string> members;  // their datasets, "mnist and fashion-mnist"
  for (const DatasetEntry& e : all) {
    const std::string v = value(e);
    if (v == otherwise) continue;
    std::vector<std::string> names;
    bool seen = false;
    for (const std::string& g : groups) seen = seen || g == v;
    if (seen) continue;
    for (const DatasetEntry& o : all) {
      if (value(o) == v) names.push_back(display_name(o));
    }
    groups.push_back(v);
    members.push_back(join_names(names, " and "));
  }
  std::string out;
  for (std::size_t i = 0; i < groups.size(); ++i) out += fmt::format("{} for {}, ", groups[i], members[i]);
  return out + otherwise + " otherwise";
}

}  // namespace engine::apps
