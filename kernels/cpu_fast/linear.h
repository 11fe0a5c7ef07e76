#pragma once
// Fully connected layer in float32 on the host, fast: three oneDNN GEMMs (gemm.h). The CPU device's float32
// path; kernels/cpu/linear.h (float64 accumulation) is the oracle it is tested against.
//
// Same layouts and contract as cpu::linear_forward / cpu::linear_backward (gradients overwritten, dx and db
// may be null):  y = x w^T + b,  dx = dy w,  dw = dy^T x,  db = column sums of dy (in double).
// Float32 sums in oneDNN's order instead of float64 in loop order: ~1e-6 relative differences.

#include "core/dtype.h"
#include "kernels/cpu/linear.h"

namespace engine::cpu_fast {

void linear_forward(const LinearShape& shape, const float* x, const float* w, const float* bias, float* y);

void linear_backward(const LinearShape& shape, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db);

// The same on bf16 x, w and dy (bf16 autocast on a host with native bf16, conv2d.h's native_bf16): oneDNN's
// bf16 matmul (gemm.h's gemm_bf16), products of bf16 values accumulated in float32; y, dx, dw and db float32
// (the caller rounds them as autocast says, kernels/ops/autocast_bf16.h). The bias is added to the float32
// product; db sums dy in double as above.
void linear_forward(const LinearShape& shape, const bfloat16* x, const bfloat16* w, const float* bias,
                    float* y);
void linear_backward(const LinearShape& shape, const bfloat16* x, const bfloat16* w, const bfloat16* dy,
                     float* dx, float* dw, float* db);

}  // namespace engine::cpu_fast
