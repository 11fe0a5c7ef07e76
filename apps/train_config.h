#pragma once
// TrainConfig: everything cnn_train's command line says, in one plain struct, and the CLI11 flags that fill
// it.
//
// Distributed training adds its own flags (--gpus, --nproc, --backend, --bucket-mb, --sync-bn, ...:
// apps/ddp.h) to the same CLI::App, and fills `world_size`/`rank`/`device_index` before the Trainer is made.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/flag_choice.h"
#include "optim/lr_schedule.h"

namespace engine::apps {

// --augment: the training images' augmentation.
enum class Augment {
  None,
  CropFlip,  // random crop with 4 pixels of zero padding, horizontal flip (data::TransformConfig::train)
};
inline constexpr std::array<FlagChoice<Augment>, 2> kAugmentChoices = {{
    {"none", Augment::None},
    {"crop-flip", Augment::CropFlip},
}};

// --schedule: the names optim::schedule_kind_name gives (checkpoints record them).
inline constexpr std::array<FlagChoice<optim::ScheduleKind>, 3> kScheduleChoices = {{
    {"constant", optim::ScheduleKind::Constant},
    {"step", optim::ScheduleKind::Step},
    {"cosine", optim::ScheduleKind::Cosine},
}};

struct TrainConfig {
  std::string dataset;    // a name of apps/dataset_catalog.h: cifar10 | mnist | fashion-mnist | folder:PATH
  std::string data_dir;   // empty: the catalog's default folder for the dataset
  bool download = false;  // fetch cifar10/mnist into the data folder when missing (apps/data_download.h)
  std::string model;      // empty: the catalog's default for the dataset
  std::int64_t epochs = 10;
  std::int64_t batch_size = 0;  // per process; 0: the catalog's default for the dataset
  double lr = -1.0;             // < 0: the catalog's default for the dataset
  double momentum = 0.9;
  double weight_decay = 5e-4;
  bool nesterov = false;
  optim::ScheduleKind schedule = optim::ScheduleKind::Constant;
  std::string step_epochs;  // "30,60"
  double gamma = 0.1;
  std::int64_t warmup_epochs = 0;
  double label_smoothing = 0.0;
  std::int64_t accumulate = 1;  // micro-batches per optimizer step (their gradients averaged)
  Augment augment = Augment::None;
  std::uint64_t seed = 0;
  bool cpu = false;
  std::int64_t limit_train = 0;  // 0: all
  std::int64_t limit_test = 0;
  std::int64_t save_every = 0;        // 0: only at the end
  std::int64_t save_every_steps = 0;  // > 0: also a mid-epoch checkpoint every K optimizer steps
  std::string checkpoint_dir = "checkpoints";
  std::string resume;  // a checkpoint, or "auto": the newest in checkpoint_dir (apps/resume_auto.h)
  std::string eval_only;
  std::string metrics;
  std::string plot;
  bool deterministic = false;

  // Filled by the program, not by flags (a distributed launcher sets them per worker).
  int world_size = 1;
  int rank = 0;
  int device_index = 0;        // the CUDA device of this process when it runs on a GPU
  bool model_given = false;    // --model was on the command line
  bool log_all_ranks = false;  // every rank prints its epoch lines (rank 0 alone saves)
  int restart_count = 0;       // TORCHELASTIC_RESTART_COUNT: torchrun's restarts before this run

  bool resume_auto() const { return resume == "auto"; }

  // CUDA: the uint8 dataset lives on the GPU; false: the staged loader (pinned host buffers and a copy
  // stream, data/loader.h). Not a flag: tests run the Trainer with either.
  bool gpu_resident_data = true;

  bool is_main() const { return rank == 0; }
  optim::LrScheduleConfig schedule_config() const;
};

// Adds every cnn_train flag to `app`, bound to `config`.
void add_train_flags(CLI::App& app, TrainConfig& config);

// After parsing: fills the defaults that depend on the dataset and checks the values CLI11 cannot (ranges,
// combinations). Throws engine::Error naming the flag.
void finish_train_config(const CLI::App& app, TrainConfig& config);

}  // namespace engine::apps
