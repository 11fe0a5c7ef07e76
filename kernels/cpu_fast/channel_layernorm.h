#pragma once
// Layer normalization over the channels of each pixel in float32 on the CPU:
// kernels/channel_layernorm_math.h's per-pixel formulas (the ones the CUDA threads run), pixels split over
// OpenMP threads; the parameter gradients one thread per channel over the pixels' saved moments. Same
// contract as kernels/cpu/ channel_layernorm.h.

#include "kernels/shapes.h"

namespace engine::cpu_fast {

void channel_layernorm_forward(const ChannelAffineShape& s, double eps, const float* x, const float* gamma,
                               const float* beta, float* y);
void channel_layernorm_backward(const ChannelAffineShape& s, double eps, const float* x, const float* gamma,
                                const float* dy, float* dx, float* dgamma, float* dbeta);

}  // namespace engine::cpu_fast
