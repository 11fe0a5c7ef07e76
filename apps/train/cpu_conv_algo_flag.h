#pragma once
// --cpu-conv-algo (cnn_train, train_bench): the CPU device's algorithm for 3x3 stride-1 convolutions
// (kernels/cpu_fast/conv2d_algo.h). direct is the default (bitwise repeatable runs); auto times direct
// against Winograd per shape and direction on the first step (cuDNN's benchmark mode), and --deterministic
// keeps it direct; winograd is refused on a host whose oneDNN has none.

#include <array>

#include "apps/train/flag_choice.h"
#include "kernels/cpu_fast/conv2d_algo.h"

namespace engine::apps {

inline constexpr std::array<FlagChoice<cpu_fast::ConvAlgo>, 3> kCpuConvAlgoChoices = {{
    {"direct", cpu_fast::ConvAlgo::Direct},
    {"winograd", cpu_fast::ConvAlgo::Winograd},
    {"auto", cpu_fast::ConvAlgo::Auto},
}};

inline constexpr const char* kCpuConvAlgoHelp =
    "CPU: 3x3 stride-1 convolutions direct (default, repeatable), winograd (oneDNN's F(4x4,3x3), AVX-512 "
    "hosts; fewer multiplies, larger rounding) or auto (the faster per shape and direction, timed on the "
    "first step; direct under --deterministic)";

// What the process runs: auto under --deterministic is direct (its choice follows timings).
inline cpu_fast::ConvAlgo effective_cpu_conv_algo(cpu_fast::ConvAlgo a, bool deterministic) {
  return a == cpu_fast::ConvAlgo::Auto && deterministic ? cpu_fast::ConvAlgo::Direct : a;
}

}  // namespace engine::apps
