#include "kernels/ops/sgd.h"

#include "kernels/cpu_fast/sgd.h"
#include "kernels/cuda/sgd.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void sgd_step(const ExecutionContext& ctx, const cpu::SgdOptions& options, const Tensor& params,
              const Tensor& grads, const Tensor& momentum, bool first_step,
              std::span<const cpu::SgdGroup> tiles, const Tensor& device_tiles, const double* device_lr) {
  ENGINE_CHECK(device_lr == nullptr || params.is_cuda(),
               "sgd: a learning rate in device memory needs CUDA parameters, these are on {}",
               params.device().str());
  dispatch("sgd", ctx, params, [&]<Path P, typename T>() {
    T* m = data_or_null<T>(momentum);
    if constexpr (P == Path::Cuda) {
      if (tiles.empty()) {
        cuda::sgd_step(cuda_stream(ctx), options, params.data<T>(), grads.data<T>(), m, params.numel(),
                       first_step, device_lr);
      } else {
        ENGINE_CHECK(device_tiles.defined() && device_tiles.is_cuda(),
                     "sgd: parameter groups on the GPU need their tiles in device memory");
        cuda::sgd_step_tiles(cuda_stream(ctx), options,
                             reinterpret_cast<const cpu::SgdGroup*>(device_tiles.data<std::uint8_t>()),
                             static_cast<int>(tiles.size()), params.data<T>(), grads.data<T>(), m,
                             params.numel(), first_step, device_lr);
      }
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::sgd_step_groups(options, tiles, params.data<T>(), grads.data<T>(), m, params.numel(),
                                first_step);
    } else {
      cpu::sgd_step_groups<T>(options, tiles, params.data<T>(), grads.data<T>(), m, params.numel(),
                              first_step);
    }
  });
}

}  // namespace engine::ops
