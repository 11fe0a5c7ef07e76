#pragma once
// Average pooling in float32 on the host, fast: OpenMP threads over the N*C planes, and a backward that
// gathers (each input cell sums the few windows that hold it) instead of the reference's scatter through a
// double plane. Same contract as cpu::avgpool2d_forward / avgpool2d_backward (kernels/cpu/avgpool2d.h, the
// oracle), and the same arithmetic: sums and quotients in double, in the same order, rounded once, so both
// directions equal the reference bit for bit (pooling is memory-bound: the double sums cost little).

#include "kernels/shapes.h"

namespace engine::cpu_fast {

void avgpool2d_forward(const AvgPool2dShape& s, const float* x, float* y);
void avgpool2d_backward(const AvgPool2dShape& s, const float* dy, float* dx);

}  // namespace engine::cpu_fast
