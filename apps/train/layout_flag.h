#pragma once
// --layout (cnn_train, train_bench): the memory order of the model's 4-d activations (core/layout.h,
// ExecutionContext::layout). NCHW is the default on every device: NHWC pays on GPUs with tensor cores
// (cuDNN's NHWC kernels), and whether it should become the default for bf16 is a GPU measurement still owed.

#include <array>

#include "apps/train/flag_choice.h"
#include "core/layout.h"

namespace engine::apps {

inline constexpr std::array<FlagChoice<Layout>, 4> kLayoutChoices = {{
    {"nchw", Layout::NCHW},
    {"nhwc", Layout::NHWC},
    {"nchw16c", Layout::NCHW16c},
    {"nchw8c", Layout::NCHW8c},
}};

inline constexpr const char* kLayoutHelp =
    "memory order of the 4-d activations: nchw (PyTorch's default) or nhwc (channels_last: cuDNN's NHWC "
    "convolutions and the NHWC BatchNorm and pooling kernels on a GPU; on the CPU the NCHW kernels run "
    "between transposes), or on the CPU oneDNN's blocked nchw16c (AVX-512) / nchw8c (AVX2): the "
    "convolutions, "
    "BatchNorm, ReLU, pooling and the residual add read and write it, so no reorder runs between them (a "
    "tensor whose channels do not fill whole blocks stays NCHW). Weights, checkpoints and the Linear "
    "features keep PyTorch's order either way";

}  // namespace engine::apps
