#pragma once
// --precision (cnn_train, train_bench): what float32 math may use on a GPU, in PyTorch's terms. The CPU
// computes fp32 whatever it says. bf16 autocast is issue 17's next step and is not a choice until it runs.

#include <array>

#include "apps/flag_choice.h"

namespace engine::apps {

enum class Precision {
  Fp32,  // fp32 everywhere: no TF32 tensor cores (torch.backends.cudnn.allow_tf32 = False)
  Tf32,  // PyTorch's default: TF32 tensor cores for convolutions, fp32 for matmul (Linear)
};
inline constexpr std::array<FlagChoice<Precision>, 2> kPrecisionChoices = {{
    {"fp32", Precision::Fp32},
    {"tf32", Precision::Tf32},
}};

// cuDNN may use TF32 (torch.backends.cudnn.allow_tf32); cuBLAS stays fp32 under both choices.
constexpr bool tf32_convolutions(Precision p) { return p == Precision::Tf32; }

}  // namespace engine::apps
