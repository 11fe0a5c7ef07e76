#pragma once
// Layer normalization over the channels of each pixel, the CPU reference (convnext's LayerNorm2d: PyTorch's
// nn.LayerNorm over the last axis of an NHWC view): x seen as [outer, channels, inner] (kernels/shapes.h's
// ChannelAffineShape: NCHW is [N, C, H*W], NHWC [N*H*W, C, 1], [N, F] is [N, F, 1]); each (outer, inner)
// pixel is normalized over its `channels` values with the biased variance, then scaled by gamma[c] and
// shifted by beta[c] (either null: 1 or 0). Everything in double, rounded once to T.
//
// Backward overwrites what it is given (a null pointer skips it):
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * gamma   (means over the pixel's channels)
//   dgamma[c] = sum over pixels of dy * xhat,  dbeta[c] = sum over pixels of dy.

#include "kernels/shapes.h"

namespace engine::cpu {

template <typename T>
void channel_layernorm_forward(const ChannelAffineShape& s, double eps, const T* x, const T* gamma,
                               const T* beta, T* y);

template <typename T>
void channel_layernorm_backward(const ChannelAffineShape& s, double eps, const T* x, const T* gamma,
                                const T* dy, T* dx, T* dgamma, T* dbeta);

}  // namespace engine::cpu
