#pragma once
// How far a float32 activation (kernels/elementwise_math.h's functors, on the CPU's fast path and on CUDA)
// may be from the double reference (kernels/cpu/activation.h), per element, for input x (exact in both) and
// upstream gradient dy. u = 2^-24 is float's unit roundoff; the bounds are stated with eps = 2u for headroom.
// exp_float and tanh_float (kernels/elementwise_math.h) are taken as 2 ulp each (measured over the float
// range by tests/cpu/activation_test.cpp: 0.99 and 1.31 ulp on the host; the GPU may fuse their
// multiply-adds).
//   Sigmoid     exp_float within 2 ulp, 1 + e and the division one rounding each: 8u relative,
//               |y - ref| <= 8 eps |ref|. Backward dy (1 - y) y from the float output y (off by 8 eps y,
//               which moves 1 - y by as much absolutely), then two products: <= 16 eps |dy| (s (1 - s) +
//               s^2).
//   Tanh        tanh_float within 2 ulp: 4 eps |ref|. Backward dy (1 - y^2) from the float output (off by
//               4 eps y, so y^2 by 8 eps y^2), then y y, 1 - and the product:
//               <= 16 eps |dy| (t^2 + |1 - t^2|).
//   SiLU        x s: 8 eps |ref|. Backward dy s (1 + x (1 - s)): 1 - s as for Sigmoid, times x, then the
//               sum and two products: <= 8 eps |dy| s (1 + |x|).
//   HardSigmoid t = alpha x + beta, one or two roundings (a fused multiply-add on the GPU and in the AVX
//               clones): <= eps (|alpha x| + |beta|); the clamp is exact. Backward dy alpha, one rounding:
//               eps |dy alpha|; an x whose t lies within the forward bound of 0 or 1 may land on either side
//               of the kink.
//   HardSwish   x (x + 3) / 6: three roundings, <= 2 eps (|x| |x + 3| / 6 + |ref|). Backward
//               dy (x / 3 + 1/2): three roundings, <= 2 eps |dy| (|x| / 3 + 1/2). The kinks at -3 and 3
//               are exact comparisons.
//   Clip        exact both ways (comparisons only).
//   LeakyRelu   alpha x: one rounding, eps |ref|; backward alpha dy: eps |dy alpha|.
// A tiny absolute floor covers results in float's subnormal range (sigmoid(-100) and its products).

#include <cmath>
#include <vector>

#include "kernels/cpu/activation.h"

namespace engine::testing {

inline constexpr double kActivationEps = 1.1920928955078125e-07;  // 2^-23
inline constexpr double kActivationAbsFloor = 1e-40;

inline double activation_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

inline double activation_forward_tolerance(const ActivationParams& p, double x) {
  const double ref = std::fabs(cpu::activation_value(p, x));
  const double e = kActivationEps;
  switch (p.kind) {
    case ActivationKind::Sigmoid:
    case ActivationKind::SiLU: return 8 * e * ref + kActivationAbsFloor;
    case ActivationKind::Tanh: return 4 * e * ref + kActivationAbsFloor;
    case ActivationKind::HardSigmoid: return e * (std::fabs(double(p.alpha) * x) + std::fabs(double(p.beta)));
    case ActivationKind::HardSwish: return 2 * e * (std::fabs(x) * std::fabs(x + 3.0) / 6.0 + ref);
    case ActivationKind::Clip: return 0.0;
    case ActivationKind::LeakyRelu: return e * ref;
  }
  return 0.0;
}

inline double activation_backward_tolerance(const ActivationParams& p, double x, double dy) {
  const double e = kActivationEps, g = std::fabs(dy);
  switch (p.kind) {
    case ActivationKind::Sigmoid: {
      const double s = activation_sigmoid(x);
      return 16 * e * g * (s * (1 - s) + s * s) + kActivationAbsFloor;
    }
    case ActivationKind::Tanh: {
      const double t = std::tanh(x);
      return 16 * e * g * (t * t + std::fabs(1 - t * t)) + kActivationAbsFloor;
    }
    case ActivationKind::SiLU:
      return 8 * e * g * activation_sigmoid(x) * (1 + std::fabs(x)) + kActivationAbsFloor;
    case ActivationKind::HardSigmoid:
    case ActivationKind::LeakyRelu: return e * g * std::fabs(double(p.alpha));
    case ActivationKind::HardSwish: return 2 * e * g * (std::fabs(x) / 3.0 + 0.5);
    case ActivationKind::Clip: return 0.0;
  }
  return 0.0;
}

// Whether float arithmetic may put x on the other side of a kink than the reference does (HardSigmoid's t
// within its rounding of 0 or 1); the backward there may be either side's value.
inline bool activation_near_kink(const ActivationParams& p, double x) {
  if (p.kind != ActivationKind::HardSigmoid) return false;
  const double t = double(p.alpha) * x + double(p.beta), tol = 2 * activation_forward_tolerance(p, x);
  return std::fabs(t) <= tol || std::fabs(t - 1.0) <= tol;
}

// Every kind with the parameters the tests use: PyTorch's and ONNX's defaults and the zoo's (ReLU6, the
// HardSigmoid of nn.Hardsigmoid), plus a Clip with one side open.
inline std::vector<ActivationParams> activation_cases() {
  return {{ActivationKind::Sigmoid, 0.0f, 0.0f},
          {ActivationKind::Tanh, 0.0f, 0.0f},
          {ActivationKind::SiLU, 0.0f, 0.0f},
          {ActivationKind::HardSigmoid, 0.2f, 0.5f},
          {ActivationKind::HardSigmoid, 1.0f / 6.0f, 0.5f},
          {ActivationKind::HardSwish, 0.0f, 0.0f},
          {ActivationKind::Clip, 0.0f, 6.0f},
          {ActivationKind::Clip, -1.5f, INFINITY},
          {ActivationKind::LeakyRelu, 0.01f, 0.0f},
          {ActivationKind::LeakyRelu, 0.2f, 0.0f}};
}

}  // namespace engine::testing
