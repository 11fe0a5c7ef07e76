#include "kernels/cpu/activation.h"

#include <cmath>

#include "core/error.h"

namespace engine::cpu {

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// clamp that lets NaN through (std::clamp would too, but says nothing about it).
double clamp(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace

double activation_value(const ActivationParams& p, double x) {
  switch (p.kind) {
    case ActivationKind::Sigmoid: return sigmoid(x);
    case ActivationKind::Tanh: return std::tanh(x);
    case ActivationKind::SiLU: return x * sigmoid(x);
    case ActivationKind::HardSigmoid: return clamp(double(p.alpha) * x + double(p.beta), 0.0, 1.0);
    case ActivationKind::HardSwish: return x * clamp(x + 3.0, 0.0, 6.0) / 6.0;
    case ActivationKind::Clip: return clamp(x, double(p.alpha), double(p.beta));
    case ActivationKind::LeakyRelu: return x > 0.0 ? x : double(p.alpha) * x;
  }
  ENGINE_FAIL("activation: unknown kind {}", static_cast<int>(p.kind));
}

double activation_derivative(const ActivationParams& p, double x) {
  switch (p.kind) {
    case ActivationKind::Sigmoid: {
      const double s = sigmoid(x);
      return s * (1.0 - s);
    }
    case ActivationKind::Tanh: {
      const double t = std::tanh(x);
      return 1.0 - t * t;
    }
    case ActivationKind::SiLU: {
      const double s = sigmoid(x);
      return s * (1.0 + x * (1.0 - s));
    }
    case ActivationKind::HardSigmoid: {
      const double t = double(p.alpha) * x + double(p.beta);
      return t > 0.0 && t < 1.0 ? double(p.alpha) : 0.0;
    }
    case ActivationKind::HardSwish:
      if (x < -3.0) return 0.0;
      return x <= 3.0 ? (2.0 * x + 3.0) / 6.0 : 1.0;
    case ActivationKind::Clip: return x > double(p.alpha) && x < double(p.beta) ? 1.0 : 0.0;
    case ActivationKind::LeakyRelu: return x > 0.0 ? 1.0 : double(p.alpha);
  }
  ENGINE_FAIL("activation: unknown kind {}", static_cast<int>(p.kind));
}

double activation_derivative_from_output(const ActivationParams& p, double y) {
  ENGINE_CHECK(activation_backward_reads_output(p.kind), "{}: backward reads the input, not the output",
               activation_name(p.kind));
  return p.kind == ActivationKind::Sigmoid ? y * (1.0 - y) : 1.0 - y * y;
}

template <typename T>
void activation_forward(const ActivationParams& p, const T* x, T* y, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "{}_forward: element count must be non-negative, got {}", activation_name(p.kind), n);
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(activation_value(p, static_cast<double>(x[i])));
}

template <typename T>
void activation_backward(const ActivationParams& p, const T* saved, const T* dy, T* dx, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "{}_backward: element count must be non-negative, got {}", activation_name(p.kind), n);
  const bool from_output = activation_backward_reads_output(p.kind);
  for (std::int64_t i = 0; i < n; ++i) {
    const double s = static_cast<double>(saved[i]);
    const double d = from_output ? activation_derivative_from_output(p, s) : activation_derivative(p, s);
    // A zero slope gives 0 whatever dy holds (PyTorch's masked backwards do the same for NaN and inf dy).
    dx[i] = static_cast<T>(d == 0.0 ? 0.0 : static_cast<double>(dy[i]) * d);
  }
}

template void activation_forward<float>(const ActivationParams&, const float*, float*, std::int64_t);
template void activation_forward<double>(const ActivationParams&, const double*, double*, std::int64_t);
template void activation_backward<float>(const ActivationParams&, const float*, const float*, float*,
                                         std::int64_t);
template void activation_backward<double>(const ActivationParams&, const double*, const double*, double*,
                                          std::int64_t);

}  // namespace engine::cpu
