#pragma once
// The pointwise activations beside ReLU and GELU, named once for every device: the reference
// (kernels/cpu/activation.h), the float formulas both fast paths apply (kernels/elementwise_math.h), the op
// (kernels/ops/activation.h) and the layer (layers/activation.h).
//
//   Sigmoid      y = 1 / (1 + e^-x)
//   Tanh         y = tanh x
//   SiLU         y = x sigmoid(x)                          (PyTorch's nn.SiLU; ONNX's Sigmoid then Mul)
//   HardSigmoid  y = clamp(alpha x + beta, 0, 1)           (ONNX's defaults alpha 0.2, beta 0.5)
//   HardSwish    y = x clamp(x + 3, 0, 6) / 6              (PyTorch's nn.Hardswish, ONNX's HardSwish)
//   Clip         y = clamp(x, alpha, beta)                 (nn.ReLU6 is alpha 0, beta 6; either may be inf)
//   LeakyRelu    y = x > 0 ? x : alpha x                   (ONNX's default alpha 0.01)
//
// Backward reads what the forward kept: its OUTPUT y for Sigmoid and Tanh (dy y (1 - y), dy (1 - y^2), as
// PyTorch's sigmoid_backward and tanh_backward: no exponential in backward), its input x for the others
// (activation_backward_reads_output). NaN propagates through every forward. The gradients at the kinks follow
// PyTorch: HardSigmoid and Clip pass dy strictly inside (PyTorch's hardsigmoid and hardtanh, which nn.ReLU6
// is), HardSwish takes the middle piece on [-3, 3] and LeakyRelu the slope alpha at 0.

#include <string_view>

namespace engine {

enum class ActivationKind { Sigmoid, Tanh, SiLU, HardSigmoid, HardSwish, Clip, LeakyRelu };

struct ActivationParams {
  ActivationKind kind = ActivationKind::Sigmoid;
  float alpha = 0.0f;  // HardSigmoid's slope, Clip's lower bound, LeakyRelu's negative slope
  float beta = 0.0f;   // HardSigmoid's offset, Clip's upper bound
};

// Whether backward takes the forward's output y (Sigmoid, Tanh) rather than its input x.
constexpr bool activation_backward_reads_output(ActivationKind k) {
  return k == ActivationKind::Sigmoid || k == ActivationKind::Tanh;
}

inline std::string_view activation_name(ActivationKind k) {
  switch (k) {
    case ActivationKind::Sigmoid: return "Sigmoid";
    case ActivationKind::Tanh: return "Tanh";
    case ActivationKind::SiLU: return "SiLU";
    case ActivationKind::HardSigmoid: return "HardSigmoid";
    case ActivationKind::HardSwish: return "HardSwish";
    case ActivationKind::Clip: return "Clip";
    case ActivationKind::LeakyRelu: return "LeakyRelu";
  }
  return "?";
}

}  // namespace engine
