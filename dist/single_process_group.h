#pragma once
// The ProcessGroup of a job of one process: every collective is the identity (all_gather copies its input),
// nothing is communicated and nothing can fail. It lets a single-process run use the same machinery as a
// distributed one where that machinery does more than communicate: the Reducer's gradient accumulation over
// --accumulate micro-batches, SyncBatchNorm2d (plain batch norm in a world of one).

#include <memory>

#include "dist/process_group.h"

namespace engine::dist {

std::unique_ptr<ProcessGroup> make_single_process_group();

}  // namespace engine::dist
