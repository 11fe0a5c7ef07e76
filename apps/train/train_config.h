#pragma once
// TrainConfig: everything cnn_train's command line says, in one plain struct, and the CLI11 flags that fill
// it.
//
// Distributed training adds its own flags (--gpus, --nproc, --backend, --bucket-mb, --sync-bn, ...:
// apps/train/ddp.h) to the same CLI::App, and fills `world_size`/`rank`/`device_index` before the Trainer is
// made.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "apps/train/cpu_conv_algo_flag.h"
#include "apps/train/cuda_graph_policy.h"
#include "apps/train/flag_choice.h"
#include "apps/train/layout_flag.h"
#include "apps/train/precision.h"
#include "optim/lr_schedule.h"

namespace engine::apps {

// --recipe: presets of a published trainer's hyperparameters (apps/train/recipe.h).
enum class Recipe { None, Airbench94 };
inline constexpr std::array<FlagChoice<Recipe>, 2> kRecipeChoices = {{
    {"none", Recipe::None},
    {"airbench94", Recipe::Airbench94},
}};

// --augment: the training images' augmentation.
enum class Augment {
  None,
  CropFlip,       // random crop with 4 pixels of zero padding, horizontal flip (data::TransformConfig::train)
  FlipTranslate,  // airbench94: flip on alternate epochs, translate with reflection (::flip_translate)
};
inline constexpr std::array<FlagChoice<Augment>, 3> kAugmentChoices = {{
    {"none", Augment::None},
    {"crop-flip", Augment::CropFlip},
    {"flip-translate", Augment::FlipTranslate},
}};

// --schedule: the names optim::schedule_kind_name gives (checkpoints record them).
inline constexpr std::array<FlagChoice<optim::ScheduleKind>, 4> kScheduleChoices = {{
    {"constant", optim::ScheduleKind::Constant},
    {"step", optim::ScheduleKind::Step},
    {"cosine", optim::ScheduleKind::Cosine},
    {"triangle", optim::ScheduleKind::Triangle},
}};

// --schedule-unit: how often the rate changes.
inline constexpr std::array<FlagChoice<optim::ScheduleUnit>, 2> kScheduleUnitChoices = {{
    {"epoch", optim::ScheduleUnit::Epoch},
    {"step", optim::ScheduleUnit::Step},
}};

// --ema-mode: what the weight average (optim/ema.h) does with the weights.
enum class EmaMode {
  Lookahead,  // copied into the weights at every update and after every epoch (airbench94)
  Average,    // kept beside the weights
};
inline constexpr std::array<FlagChoice<EmaMode>, 2> kEmaModeChoices = {{
    {"lookahead", EmaMode::Lookahead},
    {"average", EmaMode::Average},
}};

struct TrainConfig {
  Recipe recipe = Recipe::None;  // --recipe: presets (apps/train/recipe.h); explicit flags win
  std::string
      dataset;  // a name of apps/train/dataset_catalog.h: cifar10 | mnist | fashion-mnist | folder:PATH
  std::string data_dir;  // empty: the catalog's default folder for the dataset
  bool download =
      false;          // fetch cifar10/mnist into the data folder when missing (apps/train/data_download.h)
  std::string model;  // empty: the catalog's default for the dataset
  bool new_head = false;  // --new-head: an ONNX model's classifier replaced (onnx::ImportOptions::new_head)
  std::int64_t epochs = 10;
  std::int64_t batch_size = 0;  // per process; 0: the model's default (apps/train/model_defaults.h)
  double lr = -1.0;             // < 0: the model's default
  double momentum = 0.9;
  double weight_decay = 5e-4;
  bool nesterov = false;
  optim::ScheduleKind schedule = optim::ScheduleKind::Constant;
  std::string step_epochs;  // "30,60"
  double gamma = 0.1;
  std::int64_t warmup_epochs = 0;
  // airbench pieces (issue 18): per-step schedules, the triangle's knots, parameter groups, EMA.
  optim::ScheduleUnit schedule_unit = optim::ScheduleUnit::Epoch;
  double triangle_start = 0.2, triangle_peak = 0.23, triangle_end = 0.07;
  std::vector<std::string> param_groups;  // "SELECTOR:lr=X,wd=X,frozen" (optim/param_groups.h)
  std::int64_t ema_every = 0;             // 0: no weight average (optim/ema.h)
  std::int64_t ema_start_epoch = 0;
  double ema_decay = 0.95, ema_decay_pow = 3.0;
  EmaMode ema_mode = EmaMode::Lookahead;
  bool eval_ema = false;  // average mode: evaluate (and report) on the average
  int translate = 2;      // --augment flip-translate: pixels of reflection padding
  int tta = 0;            // test-time augmentation level: 0 none, 1 mirror, 2 mirror + shifts
  double label_smoothing = 0.0;
  std::int64_t whiten_init =
      0;  // > 0: the first conv whitened from this many training images (apps/train/whiten_init.h)
  std::int64_t accumulate = 1;  // micro-batches per optimizer step (their gradients averaged)
  Augment augment = Augment::None;
  // folder:PATH datasets (read from disk, data/disk_images.h): the square the model sees, evaluation's
  // shorter side before the center crop (0: image_size * 256/224), and whether bad images are skipped.
  std::int64_t image_size = 32;
  std::int64_t resize = 0;
  bool skip_bad_images = false;
  std::uint64_t seed = 0;
  bool cpu = false;
  std::int64_t limit_train = 0;  // 0: all
  std::int64_t limit_test = 0;
  std::int64_t save_every = 0;        // 0: only at the end
  std::int64_t save_every_steps = 0;  // > 0: also a mid-epoch checkpoint every K optimizer steps
  std::string checkpoint_dir = "checkpoints";
  std::string resume;  // a checkpoint, or "auto": the newest in checkpoint_dir (apps/train/resume_auto.h)
  bool overwrite =
      false;  // a new run replaces the checkpoints in checkpoint_dir (apps/train/checkpoint_folder.h)
  std::string eval_only;
  std::string metrics;
  std::string plot;
  std::string tensorboard;              // --tensorboard DIR: event files (apps/train/tensorboard_log.h)
  std::int64_t tensorboard_every = 10;  // --tensorboard-every N: the training loss every N optimizer steps
  std::string trace;                    // --trace FILE.json: a trace of --trace-steps steps (core/trace.h)
  std::int64_t trace_steps = 4;
  std::string confusion;      // --confusion FILE.png: the final model's confusion matrix on the test set
  std::string misclassified;  // --misclassified FILE.png: the test images it gets wrong
  bool deterministic = false;
  Precision precision = Precision::Tf32;
  CudaGraphMode cuda_graph = CudaGraphMode::Auto;  // --cuda-graph (apps/train/cuda_graph_policy.h)
  LayoutChoice layout = LayoutChoice::Auto;        // --layout (resolved by the Trainer: layout_flag.h)
  cpu_fast::ConvAlgo cpu_conv_algo = cpu_fast::ConvAlgo::Direct;  // --cpu-conv-algo

  // Filled by the program, not by flags (a distributed launcher sets them per worker).
  int world_size = 1;
  int rank = 0;
  int device_index = 0;           // the CUDA device of this process when it runs on a GPU
  bool model_given = false;       // --model was on the command line
  bool image_size_given = false;  // --image-size and --resize were (--eval-only: a checkpoint's transform
  bool resize_given = false;      // replaces their defaults, apps/train/eval_only_transform.h)
  bool log_all_ranks = false;     // every rank prints its epoch lines (rank 0 alone saves)
  int restart_count = 0;          // TORCHELASTIC_RESTART_COUNT: torchrun's restarts before this run

  bool resume_auto() const { return resume == "auto"; }

  // CUDA: the uint8 dataset lives on the GPU; false: the staged loader (pinned host buffers and a copy
  // stream, data/loader.h). Not a flag: tests run the Trainer with either.
  bool gpu_resident_data = true;

  bool is_main() const { return rank == 0; }
  // steps_per_epoch: optimizer steps in an epoch (the Trainer knows it once the data is loaded).
  optim::LrScheduleConfig schedule_config(std::int64_t steps_per_epoch = 1) const;
};

}  // namespace engine::apps
