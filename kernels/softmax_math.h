#pragma once
// Softmax along the last axis of [rows, k] (a classifier's probabilities), its float formulas written once:
// the fast CPU loop (kernels/cpu_fast/softmax) and the CUDA row kernel (kernels/cuda/softmax.cu) apply these
// very functions, so the CPU tests check the arithmetic the GPU runs. The float64 reference
// (kernels/cpu/softmax) stays the independent oracle.
//
//   forward   m = max_j x_j,  e_j = e^(x_j - m),  s = sum_j e_j,  y_j = e_j (1 / s)
//             (one reciprocal per row and a product per element, not a division per element: the
//             divisions were most of the CPU loop's time after the exponentials)
//             (m subtracted so no e^x overflows: every e_j <= 1 and the largest is 1, so s >= 1)
//   backward  d = sum_j dy_j y_j,  dx_j = y_j (dy_j - d)      (from the forward OUTPUT y)
//
// The row max and the two sums are reductions whose order each device picks (a warp's butterfly on the GPU,
// a sequential loop on the CPU); the per-element steps below are the same on both.

#include "core/host_device.h"
#include "kernels/elementwise_math.h"

namespace engine::elementwise {

struct Softmax {
  // e^(x - m), through the shared polynomial exp_float.
  ENGINE_HOST_DEVICE float shifted_exp(float x, float row_max) const { return exp_float(x - row_max); }
  // 1 / s, once per row.
  ENGINE_HOST_DEVICE float inverse(float sum) const { return 1.0f / sum; }
  // y = e (1 / s).
  ENGINE_HOST_DEVICE float operator()(float e, float inverse_sum) const { return e * inverse_sum; }
  // dx = y (dy - d), d = sum_j dy_j y_j over the row.
  ENGINE_HOST_DEVICE float grad(float y, float dy, float dot) const { return y * (dy - dot); }
};

}  // namespace engine::elementwise
