#pragma once
// A per-channel scale and shift, y = x * scale[c] + shift[c] (either may be undefined: 1 or 0). x is [N, C,
// H, W] in either layout or [N, F]; scale and shift hold C (or F) values in any shape, or one value for
// every element. Backward writes what is defined of dx, dscale and dshift (dscale needs x).

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void channel_affine_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& scale,
                            const Tensor& shift, const Tensor& y);
void channel_affine_backward(const ExecutionContext& ctx, const Tensor& x, const Tensor& scale,
                             const Tensor& dy, const Tensor& dx, const Tensor& dscale, const Tensor& dshift);

}  // namespace engine::ops
