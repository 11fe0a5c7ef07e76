#pragma once
// Layer normalization over the channels of each pixel (convnext's LayerNorm2d): x [N, C, H, W] in either
// layout or [N, F]; gamma and beta hold C values (either may be undefined: 1 or 0). Backward writes what is
// defined of dx, dgamma and dbeta, recomputing the pixels' moments from x (kernels/cpu/channel_layernorm.h).

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void channel_layernorm_forward(const ExecutionContext& ctx, double eps, const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, const Tensor& y);
void channel_layernorm_backward(const ExecutionContext& ctx, double eps, const Tensor& x, const Tensor& gamma,
                                const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                                const Tensor& dbeta);

}  // namespace engine::ops
