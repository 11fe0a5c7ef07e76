#pragma once
// ExecutionContext lives in core/execution_context.h so that the ops (kernels/ops) can take it; the layers
// keep their names for it.

#include "core/execution_context.h"

namespace engine::layers {
using engine::conv_algorithm_name;
using engine::ConvAlgorithm;
using engine::ExecutionContext;
using engine::Layout;
}  // namespace engine::layers
