#pragma once
// cnn_train's distributed flags (--gpus, --nproc, --backend, --bucket-mb, --sync-bn, ...) as CLI11 options
// bound to apps/train/ddp.h's DdpConfig, added to the same CLI::App as apps/train_flags.h's.

#include <CLI/CLI.hpp>

#include "apps/train/ddp.h"

namespace engine::apps {

void add_ddp_flags(CLI::App& app, DdpConfig& ddp);

}  // namespace engine::apps
