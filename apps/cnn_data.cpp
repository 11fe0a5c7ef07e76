// cnn_data: reads a dataset with the engine's readers and reports what is in it: the number of images per
// class, the pixel mean and standard deviation per channel (the numbers a Normalize transform wants), and
// optionally a PNG grid of the first samples with their labels, to see that images, colours and labels are
// right before training on them.
//
//   cnn_data --dataset cifar10|mnist|fashion-mnist|folder:PATH [--data-dir DIR] [--split train|test]
//            [--grid out.png] [--grid-rows 8] [--grid-cols 8] [--channels 3] [--size HxW]
//
// Exit codes: 0 ok; 2 bad usage or bad input (the message names the flag or the file); 1 another failure.

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apps/cli/choice_option.h"
#include "apps/cli/cli_errors.h"
#include "apps/cli/number_range.h"
#include "apps/cli/output_path.h"
#include "apps/pictures/data_grid.h"
#include "apps/train/dataset_catalog.h"
#include "core/error.h"
#include "data/file_list.h"
#include "data/image_codec.h"
#include "data/image_folder.h"
#include "data/transforms.h"

namespace {

using engine::data::Dataset;
using engine::data::Split;

constexpr std::array<engine::apps::FlagChoice<Split>, 2> kSplitChoices = {{
    {"train", Split::Train},
    {"test", Split::Test},
}};

struct Options {
  std::string dataset;
  std::string data_dir;
  Split split = Split::Train;
  std::string grid;
  int grid_rows = 8;
  int grid_cols = 8;
  int channels = 3;
  std::string size;  // "HxW" or "N" for folders; empty keeps the files' size
};

struct Loaded {
  Dataset dataset;
  std::string description;  // "cifar10 (train) from DIR"
};

// Parses --size "HxW" or "N" (square).
std::pair<std::int64_t, std::int64_t> parse_size(const std::string& text) {
  if (text.empty()) return {0, 0};
  try {
    std::size_t used = 0;
    const long long h = std::stoll(text, &used);
    if (used == text.size() && h > 0) return {h, h};
    if (text[used] == 'x' && used + 1 < text.size()) {
      std::size_t used_w = 0;
      const long long w = std::stoll(text.substr(used + 1), &used_w);
      if (used + 1 + used_w == text.size() && h > 0 && w > 0) return {h, w};
    }
  } catch (const std::exception&) {
  }
  ENGINE_FAIL("--size '{}': expected HxW or N, positive", text);
}

Loaded load(const Options& o) {
  const engine::apps::DatasetEntry& entry = engine::apps::dataset_entry(o.dataset);
  const std::string root = engine::apps::dataset_root(o.dataset, o.data_dir);
  const std::string which = fmt::format("{} ({})", o.dataset, engine::data::split_name(o.split));
  if (entry.folder_in_name) {  // ROOT/train or ROOT/test as cnn_train reads it, decoded as --channels and
                               // --size say
    const auto [h, w] = parse_size(o.size);
    const std::string path = engine::apps::folder_split_path(root, o.split);
    std::vector<std::string> classes;  // the test split's classes are the training split's, by name
    if (o.split == Split::Test) {
      classes = engine::data::list_images(engine::apps::folder_split_path(root, Split::Train)).class_names;
    }
    return {engine::data::load_image_folder(path, o.channels, h, w, classes.empty() ? nullptr : &classes),
            which + " from " + path};
  }
  return {entry.load(root, o.split), which + " from " + root};
}

void print_report(const Loaded& loaded, double seconds) {
  const Dataset& d = loaded.dataset;
  fmt::print("dataset: {}\n", loaded.description);
  fmt::print("images:  {} of {} x {} x {} (C x H x W), {} classes, read in {:.2f} s\n", d.size(), d.channels,
             d.height, d.width, d.num_classes(), seconds);

  std::vector<std::int64_t> counts(static_cast<std::size_t>(d.num_classes()), 0);
  for (const auto label : d.labels) ++counts[static_cast<std::size_t>(label)];
  fmt::print("\nclass counts:\n");
  for (std::size_t c = 0; c < counts.size(); ++c) {
    fmt::print("  {:>3}  {:<16} {:>7}  {:5.2f}%\n", c, d.class_names[c], counts[c],
               d.size() ? 100.0 * static_cast<double>(counts[c]) / static_cast<double>(d.size()) : 0.0);
  }

  static const std::array<const char*, 4> kRgba = {"R", "G", "B", "A"};
  fmt::print("\npixel statistics per channel (population std):\n");
  fmt::print("  {:<8} {:>12} {:>12} {:>11} {:>11}\n", "channel", "mean 0..255", "std 0..255", "mean 0..1",
             "std 0..1");
  // data/transforms.h computes them (exact integer sums) for normalization; the same numbers are shown here.
  const engine::data::ChannelStats stats = engine::data::channel_mean_std(d);
  for (std::int64_t c = 0; c < d.channels; ++c) {
    const double mean = static_cast<double>(stats.mean[static_cast<std::size_t>(c)]);
    const double stdev = static_cast<double>(stats.std[static_cast<std::size_t>(c)]);
    const std::string name = d.channels == 1 ? "gray" : kRgba[static_cast<std::size_t>(c)];
    fmt::print("  {:<8} {:>12.4f} {:>12.4f} {:>11.6f} {:>11.6f}\n", name, mean * 255.0, stdev * 255.0, mean,
               stdev);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"cnn_data: class counts, pixel statistics and a sample grid of a dataset"};
  app.add_option("--dataset", o.dataset,
                 engine::apps::dataset_names() + " (folder: one sub-folder per class)")
      ->required()
      ->check([](const std::string& v) -> std::string {
        if (engine::apps::find_dataset(v) != nullptr) return {};
        return "expected " + engine::apps::dataset_names() + ", got '" + v + "'";
      });
  app.add_option("--data-dir", o.data_dir,
                 "dataset folder (default: " + engine::apps::default_roots_help() + ")");
  engine::apps::add_choice_option(app, "--split", o.split, kSplitChoices, "train or test");
  app.add_option("--grid", o.grid, "write a PNG grid of the first samples with their labels")
      ->check(CLI::Validator(engine::apps::output_file_problem, "FILE", "WRITABLE"));
  app.add_option("--grid-rows", o.grid_rows, "grid rows")->check(engine::apps::number_range(1, 64));
  app.add_option("--grid-cols", o.grid_cols, "grid columns")->check(engine::apps::number_range(1, 64));
  app.add_option("--channels", o.channels, "folder datasets: channels to decode to (1, 3 or 4)")
      ->check(CLI::IsMember({1, 3, 4}));
  app.add_option("--size", o.size, "folder datasets: resize every image to HxW (or N x N); default: keep");
  engine::apps::add_verbose_flag(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return engine::apps::report_parse_error(app, e, "cnn_data");
  }

  Loaded loaded;
  try {
    const auto start = std::chrono::steady_clock::now();
    loaded = load(o);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    print_report(loaded, seconds);
  } catch (const engine::Error& e) {  // the readers' and flags' errors: bad input
    fmt::print(stderr, "cnn_data: {}\n", engine::apps::failure_text(e));
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cnn_data: {}\n", engine::apps::failure_text(e));
    return 1;
  }

  if (!o.grid.empty()) {
    try {
      const auto grid = engine::apps::make_sample_grid(loaded.dataset, o.grid_rows, o.grid_cols);
      engine::data::write_png(o.grid, grid);
      fmt::print("\nwrote {} ({} x {} pixels: the first {} samples)\n", o.grid, grid.width, grid.height,
                 std::min<std::int64_t>(loaded.dataset.size(), std::int64_t{o.grid_rows} * o.grid_cols));
    } catch (const std::exception& e) {
      fmt::print(stderr, "cnn_data: --grid {}: {}\n", o.grid, engine::apps::failure_text(e));
      return 1;
    }
  }
  return 0;
}
