#include "apps/train/checkpoint_match.h"

#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace engine::apps {

namespace {

constexpr std::string_view kFolderPrefix = "folder:";

std::vector<std::string> split_csv(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

bool is_folder(const std::string& dataset) { return dataset.starts_with(kFolderPrefix); }

std::string classes_text(const std::vector<std::string>& names) {
  return fmt::format("{} classes ({})", names.size(), fmt::join(names, ", "));
}

}  // namespace

std::string check_checkpoint_fits_run(const std::string& flag, const std::string& path,
                                      const std::map<std::string, std::string>& metadata,
                                      const RunIdentity& run) {
  const auto value = [&](const char* key) {
    const auto it = metadata.find(key);
    return it == metadata.end() ? std::string() : it->second;
  };
  const std::string dataset = value("dataset"), model = value("model");
  const std::vector<std::string> classes = split_csv(value("class_names"));
  const std::string what = fmt::format("{}: {} was trained", flag, path);
  const std::string instead =
      flag.starts_with("--resume auto") ? "or give another --checkpoint-dir to start a new run"
      : flag.starts_with("--resume")    ? "or leave out --resume to start a new run (with --overwrite where "
                                          "--checkpoint-dir holds checkpoints)"
                                        : "or evaluate another checkpoint";
  if (run.same_dataset && !dataset.empty()) {
    const bool same =
        is_folder(dataset) && is_folder(run.dataset) ? classes == run.class_names : dataset == run.dataset;
    ENGINE_CHECK(same, "{} on {} ({}), this run is on {} ({}): use --dataset {}, {}", what, dataset,
                 classes_text(classes), run.dataset, classes_text(run.class_names), dataset, instead);
  }
  if (!model.empty() && !run.model.empty()) {
    ENGINE_CHECK(model == run.model, "{} as model {}, this run's --model is {}: use --model {} (or none), {}",
                 what, model, run.model, model, instead);
  }
  const std::string shape = fmt::format("{}x{}x{}", value("channels"), value("height"), value("width"));
  const std::string run_shape = fmt::format("{}x{}x{}", run.channels, run.height, run.width);
  if (metadata.count("channels") == 1 && metadata.count("height") == 1 && metadata.count("width") == 1) {
    ENGINE_CHECK(shape == run_shape,
                 "{} on {} images (channels x height x width) of {}, this run's {} has {}: use a dataset of "
                 "its images, {}",
                 what, shape, dataset.empty() ? "its dataset" : dataset, run.dataset, run_shape, instead);
  }
  if (metadata.count("class_names") == 1) {
    ENGINE_CHECK(classes.size() == run.class_names.size(), "{} on {}, this run's dataset {} has {}", what,
                 classes_text(classes), run.dataset, classes_text(run.class_names));
  }
  const bool other_dataset =
      is_folder(dataset) && is_folder(run.dataset) ? classes != run.class_names : dataset != run.dataset;
  if (run.same_dataset || dataset.empty() || !other_dataset) return {};
  return fmt::format("cnn_train: note: {} on {} ({}); evaluating it on {} ({})", what, dataset,
                     classes_text(classes), run.dataset, classes_text(run.class_names));
}

}  // namespace engine::apps
