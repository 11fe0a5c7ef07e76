#pragma once
// --precision (cnn_train, train_bench): the math of float32 models, in PyTorch's terms.
//   fp32  no TF32 anywhere (torch.backends.cudnn.allow_tf32 = False)
//   tf32  PyTorch's default: TF32 tensor cores for convolutions on a GPU, fp32 for matmul (Linear); the CPU
//         computes fp32
//   bf16  torch.autocast(dtype=torch.bfloat16) at Conv2d and Linear (kernels/ops/autocast_bf16.h): bf16
//         inputs and weights (a bf16 mirror of the fp32 master weights), fp32 accumulation, bf16 outputs and
//         gradients, bf16 activations between the layers; BatchNorm statistics, the loss and SGD in fp32;
//         checkpoints fp32. On a GPU bf16 tensor-core GEMMs (cuDNN, cuBLAS) and bf16 kernels; on the CPU the
//         same data flow with the fp32 kernels on bf16 values (what the tests here run).

#include <array>

#include "apps/train/flag_choice.h"

namespace engine::apps {

enum class Precision {
  Fp32,
  Tf32,
  Bf16,
};
inline constexpr std::array<FlagChoice<Precision>, 3> kPrecisionChoices = {{
    {"fp32", Precision::Fp32},
    {"tf32", Precision::Tf32},
    {"bf16", Precision::Bf16},
}};

// cuDNN may use TF32 (torch.backends.cudnn.allow_tf32); cuBLAS stays fp32 under every choice. Under bf16 the
// convolutions see bf16 values only, which TF32 (10-bit significand) holds exactly: their products are exact
// either way, so TF32 changes nothing but the speed (and the bf16 GEMMs do not use it at all).
constexpr bool tf32_convolutions(Precision p) { return p != Precision::Fp32; }
// ExecutionContext::autocast_bf16.
constexpr bool autocast_bf16(Precision p) { return p == Precision::Bf16; }

}  // namespace engine::apps
