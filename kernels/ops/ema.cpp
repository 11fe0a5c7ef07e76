#include "kernels/ops/ema.h"

#include "kernels/cpu/ema.h"
#include "kernels/cpu_fast/ema.h"
#include "kernels/cuda/ema.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void ema_update(const ExecutionContext& ctx, double rho, const Tensor& ema, const Tensor& x, bool copy_back) {
  ENGINE_CHECK(ema.shape() == x.shape() && ema.dtype() == x.dtype() && ema.device() == x.device(),
               "ema_update: {} and {} differ", ema.str(), x.str());
  if (x.numel() == 0) return;
  dispatch("ema_update", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::ema_update(cuda_stream(ctx), rho, ema.data<T>(), x.data<T>(), x.numel(), copy_back);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::ema_update(rho, ema.data<T>(), x.data<T>(), x.numel(), copy_back);
    } else {
      cpu::ema_update<T>(rho, ema.data<T>(), x.data<T>(), x.numel(), copy_back);
    }
  });
}

}  // namespace engine::ops
