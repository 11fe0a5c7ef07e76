#pragma once
// Layer normalization over the channels of each pixel in float32 on the CPU,
// kernels/channel_layernorm_math.h's formulas (the ones the CUDA threads run), sums in double. NCHW: blocks
// of 64 neighbouring pixels along H*W split over OpenMP threads, each channel's run of the block read whole
// (the pixels' sums in the reference's order); the parameter gradients summed per block, then per channel
// over the blocks in order (the same bits whatever the thread count). NHWC and [N, F]: a pixel per row. Same
// contract as kernels/cpu/channel_layernorm.h.

#include "kernels/shapes.h"

namespace engine::cpu_fast {

void channel_layernorm_forward(const ChannelAffineShape& s, double eps, const float* x, const float* gamma,
                               const float* beta, float* y);
void channel_layernorm_backward(const ChannelAffineShape& s, double eps, const float* x, const float* gamma,
                                const float* dy, float* dx, float* dgamma, float* dbeta);

}  // namespace engine::cpu_fast
