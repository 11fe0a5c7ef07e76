#pragma once
// cnn_train's command line: every flag of a training run (apps/train/train_config.h's TrainConfig) as a CLI11
// option, and what the flags given decide once parsed (the dataset's and the model's defaults, --recipe's
// presets under the flags given, the checks CLI11 cannot make). Distributed training adds its own flags
// (apps/ddp_flags.h) to the same CLI::App.

#include <CLI/CLI.hpp>

#include "apps/train/train_config.h"

namespace engine::apps {

// Adds every cnn_train flag to `app`, bound to `config`.
void add_train_flags(CLI::App& app, TrainConfig& config);

// After parsing: fills the defaults that depend on the dataset and the model, and checks the values CLI11
// cannot (ranges, combinations). Throws engine::Error naming the flag.
void finish_train_config(const CLI::App& app, TrainConfig& config);

}  // namespace engine::apps
