#pragma once
// Max pooling in float32 on the host, fast: OpenMP threads over the N*C planes. Same contract as
// cpu::maxpool2d_forward / maxpool2d_backward (kernels/cpu/maxpool2d.h, the oracle): argmax is the index of
// the first maximum in scan order within its input plane (NaN wins), backward OVERWRITES dx.
// Forward equals the reference bit for bit. Backward adds the dy of overlapping windows in float where the
// reference adds in double; without overlap (stride >= kernel, every zoo model) each dx cell receives one dy
// or none, and the two agree bit for bit.

#include <cstdint>

#include "kernels/cpu/maxpool2d.h"

namespace engine::cpu_fast {

void maxpool2d_forward(const Pool2dShape& s, const float* x, float* y, std::int32_t* argmax);
void maxpool2d_backward(const Pool2dShape& s, const float* dy, const std::int32_t* argmax, float* dx);

}  // namespace engine::cpu_fast
