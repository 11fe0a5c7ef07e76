#include "kernels/ops/sgd.h"

#include "kernels/cpu_fast/sgd.h"
#include "kernels/cuda/sgd.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void sgd_step(const ExecutionContext& ctx, const cpu::SgdOptions& options, const Tensor& params,
              const Tensor& grads, const Tensor& momentum, bool first_step,
              std::span<const cpu::SgdGroup> tiles, const Tensor& device_tiles, const Tensor& bf16_mirror,
              const double* device_lr) {
  ENGINE_CHECK(device_lr == nullptr || params.is_cuda(),
               "sgd: a learning rate in device memory needs CUDA parameters, these are on {}",
               params.device().str());
  ENGINE_CHECK(!bf16_mirror.defined() ||
                   (bf16_mirror.dtype() == DType::BF16 && bf16_mirror.numel() == params.numel() &&
                    bf16_mirror.device() == params.device()),
               "sgd: the bf16 mirror {} does not match the parameters {}", bf16_mirror.str(), params.str());
  bfloat16* mirror = data_or_null<bfloat16>(bf16_mirror);
  dispatch("sgd", ctx, params, [&]<Path P, typename T>() {
    T* m = data_or_null<T>(momentum);
    if constexpr (P == Path::Cuda) {
      if (tiles.empty()) {
        cuda::sgd_step(cuda_stream(ctx), options, params.data<T>(), grads.data<T>(), m, params.numel(),
                       first_step, mirror, device_lr);
      } else {
        ENGINE_CHECK(device_tiles.defined() && device_tiles.is_cuda(),
                     "sgd: parameter groups on the GPU need their tiles in device memory");
        cuda::sgd_step_tiles(cuda_stream(ctx), options,
                             reinterpret_cast<const cpu::SgdGroup*>(device_tiles.data<std::uint8_t>()),
                             static_cast<int>(tiles.size()), params.data<T>(), grads.data<T>(), m,
                             params.numel(), first_step, mirror, device_lr);
      }
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::sgd_step_groups(options, tiles, params.data<T>(), grads.data<T>(), m, params.numel(),
                                first_step, mirror);
    } else {
      ENGINE_CHECK(mirror == nullptr, "sgd: a bf16 mirror needs float32 parameters, not {}", params.str());
      cpu::sgd_step_groups<T>(options, tiles, params.data<T>(), grads.data<T>(), m, params.numel(),
                              first_step);
    }
  });
}

}  // namespace engine::ops
