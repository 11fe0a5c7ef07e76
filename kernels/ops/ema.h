#pragma once
// The EMA / lookahead update over one flat buffer (kernels/cpu/ema.h: ema = rho * ema + (1 - rho) * x, and
// with copy_back x = ema too), on the tensors' device.

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void ema_update(const ExecutionContext& ctx, double rho, const Tensor& ema, const Tensor& x, bool copy_back);

}  // namespace engine::ops
