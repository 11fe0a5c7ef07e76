#pragma once
// Layer normalization over the channels of each pixel on the GPU, float32: one thread per pixel running
// kernels/channel_layernorm_math.h's formulas (the CPU's, double sums, each output rounded once); the
// parameter gradients one block per channel over the pixels' moments (kept in device scratch), summed in
// double in a fixed order (deterministic). Same contract as kernels/cpu/channel_layernorm.h.

#include "kernels/cuda_api.h"
#include "kernels/shapes.h"

namespace engine::cuda {

void channel_layernorm_forward(cudaStream_t stream, const ChannelAffineShape& s, double eps, const float* x,
                               const float* gamma, const float* beta, float* y);
void channel_layernorm_backward(cudaStream_t stream, const ChannelAffineShape& s, double eps, const float* x,
                                const float* gamma, const float* dy, float* dx, float* dgamma, float* dbeta);

}  // namespace engine::cuda
