#pragma once
// 2-D average pooling on the GPU, the geometry and rules of kernels/cpu/avgpool2d.h (AvgPool2dShape): the
// window's real cells summed in row-major order in double, divided by the whole window (count_include_pad)
// or by its real cells, rounded once. Backward is a gather: one thread per INPUT cell adds dy / divisor of
// the windows that hold it in increasing output order, in double: the reference's terms in the reference's
// order, so both directions are bitwise the CPU's; no atomics, every dx cell written (OVERWRITTEN).

#include "core/dtype.h"
#include "core/layout.h"
#include "kernels/cpu/avgpool2d.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// x: [n, c, h, w]; y: [n, c, p, q], both in `layout`.
void avgpool2d_forward(cudaStream_t stream, const AvgPool2dShape& shape, const float* x, float* y,
                       Layout layout = Layout::NCHW);
// dy: [n, c, p, q]; dx: [n, c, h, w], overwritten.
void avgpool2d_backward(cudaStream_t stream, const AvgPool2dShape& shape, const float* dy, float* dx,
                        Layout layout = Layout::NCHW);

// The same over bf16 storage (bf16 autocast): read as floats, summed in double, each output rounded once
// to bf16.
void avgpool2d_forward(cudaStream_t stream, const AvgPool2dShape& shape, const bfloat16* x, bfloat16* y,
                       Layout layout = Layout::NCHW);
void avgpool2d_backward(cudaStream_t stream, const AvgPool2dShape& shape, const bfloat16* dy, bfloat16* dx,
                        Layout layout = Layout::NCHW);

}  // namespace engine::cuda
