#pragma once
// The per-element pieces of the fast CPU BatchNorm2d kernels that both layouts share (batchnorm2d.cpp: NCHW;
// batchnorm2d_blocked.cpp: nChw8c/nChw16c), so the formulas are written once.

#include <bit>
#include <cstdint>

#include "core/error.h"
#include "kernels/cpu/batchnorm2d.h"
#include "kernels/cpu_fast/bf16_io.h"

namespace engine::cpu_fast::bn_parts {

// ReLU of the engine (kernels/cpu/relu.h): NaN propagates.
inline float relu(float v) { return (v > 0.0f || v != v) ? v : 0.0f; }

// dy as BatchNorm sees it: fused, masked by the fused output (ReLU's backward: dy where y > 0, else +0).
// The mask is a bitwise and, not a select: GCC leaves a select in these double loops as control flow and
// does not vectorise them.
template <bool kMask, typename T>
inline double grad_at(const T* dy, const T* relu_y, std::int64_t i) {
  const float d = loaded(dy[i]);
  if constexpr (kMask) {
    const std::uint32_t keep = 0u - static_cast<std::uint32_t>(loaded(relu_y[i]) > 0.0f);
    return static_cast<double>(std::bit_cast<float>(std::bit_cast<std::uint32_t>(d) & keep));
  } else {
    return static_cast<double>(d);
  }
}

// The running statistics' update of channel c from the batch's mean and sum of squared deviations over m
// values (unbiased variance), with the optional shift of the running mean; none without running_mean.
inline void update_running(int c, double mean, double sq, double m, double momentum, float* running_mean,
                           float* running_var, const float* running_mean_shift) {
  if (running_mean == nullptr) return;
  const double shifted =
      mean + (running_mean_shift != nullptr ? static_cast<double>(running_mean_shift[c]) : 0.0);
  running_mean[c] =
      static_cast<float>((1.0 - momentum) * static_cast<double>(running_mean[c]) + momentum * shifted);
  running_var[c] =
      static_cast<float>((1.0 - momentum) * static_cast<double>(running_var[c]) + momentum * sq / (m - 1.0));
}

// The training forward's argument checks (both layouts' kernels).
inline void check_forward_training(const BatchNorm2dShape& g, double momentum, double eps, const void* x,
                                   const void* y, const float* save_mean, const float* save_invstd,
                                   const float* running_mean, const float* running_var) {
  g.validate_training(momentum, eps);
  ENGINE_CHECK(x != nullptr && y != nullptr && save_mean != nullptr && save_invstd != nullptr,
               "batchnorm2d_forward_training: x, y, save_mean and save_invstd must not be null");
  ENGINE_CHECK(
      (running_mean == nullptr) == (running_var == nullptr),
      "batchnorm2d_forward_training: running_mean and running_var must both be given or both be null");
}

}  // namespace engine::cpu_fast::bn_parts
