#pragma once
// A per-channel scale and shift in float32 on the CPU: the reference's arithmetic (kernels/cpu/
// channel_affine.h: the product and sum formed in double, rounded once, so the forward and dx are bitwise
// the reference's), the channels' sums split over OpenMP threads by channel.

#include "kernels/shapes.h"

namespace engine::cpu_fast {

void channel_affine_forward(const ChannelAffineShape& s, const float* x, const float* scale,
                            const float* shift, float* y);
void channel_affine_backward(const ChannelAffineShape& s, const float* x, const float* scale, const float* dy,
                             float* dx, float* dscale, float* dshift);

}  // namespace engine::cpu_fast
