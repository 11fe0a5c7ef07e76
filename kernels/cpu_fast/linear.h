#pragma once
// Fully connected layer in float32 on the host, fast: three oneDNN GEMMs (gemm.h). The CPU device's float32
// path; kernels/cpu/linear.h (float64 accumulation) is the oracle it is tested against.
//
// Same layouts and contract as cpu::linear_forward / cpu::linear_backward (gradients overwritten, dx and db
// may be null):  y = x w^T + b,  dx = dy w,  dw = dy^T x,  db = column sums of dy (in double).
// Float32 sums in oneDNN's order instead of float64 in loop order: ~1e-6 relative differences.

#include "kernels/cpu/linear.h"

namespace engine::cpu_fast {

void linear_forward(const LinearShape& shape, const float* x, const float* w, const float* bias, float* y);

void linear_backward(const LinearShape& shape, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db);

}  // namespace engine::cpu_fast
