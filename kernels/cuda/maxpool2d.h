#pragma once
// 2-D max pooling on the GPU, the geometry and rules of kernels/cpu/maxpool2d.h (Pool2dShape):
// padding is -inf, the FIRST maximum in row-major window order wins a tie (`v > best || isnan(v)`), the
// argmax is the int32 index ih * w + iw in the input plane. Forward is bitwise equal to the CPU.
//
// Backward is a gather, not a scatter: one thread per INPUT cell visits the few output windows that cover
// it and sums dy where that window's argmax is this cell, in a fixed order. No atomics, so it is
// deterministic, and every dx element is written (OVERWRITTEN), so dx needs no zeroing first.

#include <cstdint>

#include "core/dtype.h"
#include "core/layout.h"
#include "kernels/cpu/maxpool2d.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// x: [n, c, h, w]; y and argmax: [n, c, p, q], all in `layout` (NHWC: channels last; the argmax values
// are the plane's cell ih * w + iw in both layouts, so both give the same values and indices, each stored
// at its layout's position).
void maxpool2d_forward(cudaStream_t stream, const Pool2dShape& shape, const float* x, float* y,
                       std::int32_t* argmax, Layout layout = Layout::NCHW);
// dy and argmax: [n, c, p, q]; dx: [n, c, h, w], overwritten.
void maxpool2d_backward(cudaStream_t stream, const Pool2dShape& shape, const float* dy,
                        const std::int32_t* argmax, float* dx, Layout layout = Layout::NCHW);

// The same over bf16 storage (bf16 autocast): compared as floats, the backward summed in double; each
// output rounded once to bf16 (the float kernel's result on the widened input, rounded).
void maxpool2d_forward(cudaStream_t stream, const Pool2dShape& shape, const bfloat16* x, bfloat16* y,
                       std::int32_t* argmax, Layout layout = Layout::NCHW);
void maxpool2d_backward(cudaStream_t stream, const Pool2dShape& shape, const bfloat16* dy,
                        const std::int32_t* argmax, bfloat16* dx, Layout layout = Layout::NCHW);

}  // namespace engine::cuda
