#pragma once
// A per-channel scale and shift, the CPU reference: y = x * scale[c] + shift[c] over x seen as
// [outer, channels, inner] (kernels/shapes.h: NCHW, NHWC, [N, F] and the one-value case are all this shape).
// A null scale means 1, a null shift 0 (ONNX's Mul and Add by a per-channel constant are each one half).
// Formed in double, rounded once to T.
//
// Backward overwrites what it is given (a null pointer skips it): dx = dy * scale[c] (dy when scale is
// null), dscale[c] = sum of dy * x over the channel's cells, dshift[c] = sum of dy; sums in double.

#include "kernels/shapes.h"

namespace engine::cpu {

template <typename T>
void channel_affine_forward(const ChannelAffineShape& s, const T* x, const T* scale, const T* shift, T* y);

template <typename T>
void channel_affine_backward(const ChannelAffineShape& s, const T* x, const T* scale, const T* dy, T* dx,
                             T* dscale, T* dshift);

}  // namespace engine::cpu
