#pragma once
// Max pooling in float32 on the host, fast: OpenMP threads over the N*C planes. Same contract as
// cpu::maxpool2d_forward / maxpool2d_backward (kernels/cpu/maxpool2d.h, the oracle): argmax is the index of
// the first maximum in scan order within its input plane (NaN wins), backward OVERWRITES dx.
// Forward equals the reference bit for bit. Backward adds the dy of overlapping windows in float where the
// reference adds in double; without overlap (stride >= kernel, every zoo model) each dx cell receives one dy
// or none, and the two agree bit for bit.
// bf16 storage (bf16 autocast): the same loops on bfloat16 x, y, dy and dx (kernels/cpu_fast/bf16_io.h),
// backward's sums in float and rounded once: the float32 kernel's bits on the widened tensors, rounded.

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/maxpool2d.h"

namespace engine::cpu_fast {

void maxpool2d_forward(const Pool2dShape& s, const float* x, float* y, std::int32_t* argmax);
void maxpool2d_backward(const Pool2dShape& s, const float* dy, const std::int32_t* argmax, float* dx);
void maxpool2d_forward(const Pool2dShape& s, const bfloat16* x, bfloat16* y, std::int32_t* argmax);
void maxpool2d_backward(const Pool2dShape& s, const bfloat16* dy, const std::int32_t* argmax, bfloat16* dx);

}  // namespace engine::cpu_fast
