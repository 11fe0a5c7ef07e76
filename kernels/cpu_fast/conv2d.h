#pragma once
// 2-D convolution in float32 on the host, fast: im2col + GEMM (OpenBLAS). The CPU device's float32 path;
// kernels/cpu/conv2d.h (float64 accumulation, plain loops) stays the oracle it is tested against, and the
// float64 path the model gradient checks run.
//
// Same geometry, layouts and contract as cpu::conv2d_forward / cpu::conv2d_backward (gradients are
// overwritten, dx and db may be null). Per image, the input is unfolded into a column matrix
// col[C*R*S, P*Q] (a 1x1, stride-1, unpadded convolution uses the image itself) and
//   forward:   y[n]  = W[K, CRS] * col                      (+ bias)
//   backward:  dW   += dy[n][K, PQ] * col^T                  (summed over the batch in float)
//              dcol  = W^T * dy[n], folded back into dx[n]   (col2im, adding overlapping windows)
//              db    = sum of dy over n, p, q                (in double)
// The sums are float32 with OpenBLAS's blocking instead of the reference's float64 in loop order, so
// results differ from the reference by float rounding: about 1e-6 relative per output for these sizes.

#include "kernels/cpu/conv2d.h"

namespace engine::cpu_fast {

void conv2d_forward(const cpu::Conv2dShape& shape, const float* x, const float* w, const float* bias,
                    float* y);

void conv2d_backward(const cpu::Conv2dShape& shape, const float* x, const float* w, const float* dy,
                     float* dx, float* dw, float* db);

}  // namespace engine::cpu_fast
