#include "kernels/ops/sgd.h"

#include "kernels/cpu_fast/sgd.h"
#include "kernels/cuda/sgd.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void sgd_step(const ExecutionContext& ctx, const cpu::SgdOptions& options, const Tensor& params,
              const Tensor& grads, const Tensor& momentum, bool first_step) {
  dispatch("sgd", ctx, params, [&]<Path P, typename T>() {
    T* m = data_or_null<T>(momentum);
    if constexpr (P == Path::Cuda) {
      cuda::sgd_step(cuda_stream(ctx), options, params.data<T>(), grads.data<T>(), m, params.numel(),
                     first_step);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::sgd_step(options, params.data<T>(), grads.data<T>(), m, params.numel(), first_step);
    } else {
      cpu::sgd_step<T>(options, params.data<T>(), grads.data<T>(), m, params.numel(), first_step);
    }
  });
}

}  // namespace engine::ops
