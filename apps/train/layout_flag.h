#pragma once
// --layout (cnn_train, train_bench): the memory order of the model's 4-d activations (core/layout.h,
// ExecutionContext::layout). auto, the default, is the CPU's blocked nChw16c where oneDNN runs AVX-512
// (8-12% less CPU per step than NCHW there on resnet18 and vgg6, benchmarks/RESULTS.md) and NCHW everywhere
// else: on a GPU (NHWC pays on tensor cores, but whether it should be the default is a GPU measurement
// still owed) and on an AVX2 host (nChw8c is unmeasured there, so it stays as it was).

#include <array>
#include <string>
#include <string_view>

#include "apps/train/flag_choice.h"
#include "core/layout.h"

namespace engine::apps {

enum class LayoutChoice { Auto, Nchw, Nhwc, Nchw16c, Nchw8c };

inline constexpr std::array<FlagChoice<LayoutChoice>, 5> kLayoutChoices = {{
    {"auto", LayoutChoice::Auto},
    {"nchw", LayoutChoice::Nchw},
    {"nhwc", LayoutChoice::Nhwc},
    {"nchw16c", LayoutChoice::Nchw16c},
    {"nchw8c", LayoutChoice::Nchw8c},
}};

inline constexpr const char* kLayoutHelp =
    "memory order of the 4-d activations: auto (default: nchw16c on a CPU whose oneDNN runs AVX-512, else "
    "nchw), nchw (PyTorch's default) or nhwc (channels_last: cuDNN's NHWC convolutions and the NHWC "
    "BatchNorm and pooling kernels on a GPU; on the CPU the NCHW kernels run between transposes), or on the "
    "CPU oneDNN's blocked nchw16c (AVX-512) / nchw8c (AVX2): the convolutions, BatchNorm, ReLU, pooling "
    "and the residual add read and write it, the other ops convert (a tensor whose channels do not fill "
    "whole blocks stays NCHW). Weights, checkpoints and the Linear features keep PyTorch's order either way";

// The flag's name of a layout ("nchw16c"): what the benchmarks' JSON records.
inline std::string_view layout_flag_name(Layout l) {
  switch (l) {
    case Layout::NHWC: return "nhwc";
    case Layout::NCHW16c: return "nchw16c";
    case Layout::NCHW8c: return "nchw8c";
    default: return "nchw";
  }
}

struct ResolvedLayout {
  Layout layout;
  std::string why;  // for the run's log: "auto: oneDNN runs avx512_core_bf16"
};

// The layout a run takes: an explicit choice as it is; auto as the header says, from the device and the
// instruction set oneDNN dispatches (cpu_fast::onednn_isa(): "avx2", "avx512_core", "avx512_core_bf16"...).
inline ResolvedLayout resolve_layout(LayoutChoice choice, bool cuda, std::string_view isa) {
  switch (choice) {
    case LayoutChoice::Nchw: return {Layout::NCHW, "--layout nchw"};
    case LayoutChoice::Nhwc: return {Layout::NHWC, "--layout nhwc"};
    case LayoutChoice::Nchw16c: return {Layout::NCHW16c, "--layout nchw16c"};
    case LayoutChoice::Nchw8c: return {Layout::NCHW8c, "--layout nchw8c"};
    case LayoutChoice::Auto: break;
  }
  if (cuda) return {Layout::NCHW, "auto: a GPU"};
  if (isa.starts_with("avx512_core")) return {Layout::NCHW16c, "auto: oneDNN runs " + std::string(isa)};
  return {Layout::NCHW, "auto: oneDNN runs " + std::string(isa) + ", not AVX-512"};
}

}  // namespace engine::apps
