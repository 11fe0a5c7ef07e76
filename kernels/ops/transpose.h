#pragma once
// The layout change between NCHW, NHWC and the CPU's blocked nChw8c/nChw16c of a 4-d tensor [N, C, H, W]
// (core/layout.h): the same logical values in another memory order (each a batch of matrix transposes;
// NHWC <-> blocked through NCHW). Forward and backward of the op are its two directions. Any element type of
// 2, 4 or 8 bytes (float32, float64, int32, bf16), on the tensors' device: the reference loop on the CPU
// (kernels/cpu/transpose.h), a tiled kernel on CUDA (kernels/cuda/transpose.h).

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

// dst = src in dst's layout. Same shape, dtype and device; different layouts; no overlap.
void transpose_layout(const ExecutionContext& ctx, const Tensor& src, const Tensor& dst);
// A new tensor with t's values in `layout` (on t's device, allocated on ctx's stream); t itself when it is
// already in that layout or is not 4-d (only 4-d tensors have another form).
Tensor to_layout(const ExecutionContext& ctx, const Tensor& t, Layout layout);

}  // namespace engine::ops
