#pragma once
// Global average pooling in float32 on the host, fast: [N, C, H, W] -> [N, C] and back, the reference's
// arithmetic (kernels/cpu/avgpool.h, the oracle) in vector lanes, planes threaded with OpenMP (parallel.h).
//   forward   each plane summed in 16 float partial sums (one per lane of an AVX-512 vector: lane l takes
//             the elements i = l mod 16, floor(H W / 16) of them) and the last H W mod 16 in double, the
//             lanes folded in double, divided by H W in double, rounded once to float (the reference sums
//             in double, in order). PyTorch sums in float too; tests/cpu/cpu_fast_global_avgpool_test.cpp
//             derives the bound.
//   backward  dx = float(dy / (H W)) spread over the plane: the reference's very arithmetic, bit for bit.

#include <cstdint>

namespace engine::cpu_fast {

void global_avgpool_forward(int n, int c, int h, int w, const float* x, float* y);
// dx has the forward input's shape [N, C, H, W]; overwritten.
void global_avgpool_backward(int n, int c, int h, int w, const float* dy, float* dx);

}  // namespace engine::cpu_fast
