#pragma once
// A per-channel scale and shift on the GPU, float32: the reference's rule (kernels/cpu/channel_affine.h), the
// product and sum formed in double without contraction and rounded once, so the forward and dx are bitwise
// the reference's. The gradients of scale and shift are one block per channel summing in double in a fixed
// order (deterministic; equal to the reference to the final rounding). Backward overwrites what it is given.

#include "kernels/cuda_api.h"
#include "kernels/shapes.h"

namespace engine::cuda {

void channel_affine_forward(cudaStream_t stream, const ChannelAffineShape& s, const float* x,
                            const float* scale, const float* shift, float* y);
void channel_affine_backward(cudaStream_t stream, const ChannelAffineShape& s, const float* x,
                             const float* scale, const float* dy, float* dx, float* dscale, float* dshift);

}  // namespace engine::cuda
