#include "kernels/ops/residual_add.h"

#include "kernels/cpu/residual_add.h"
#include "kernels/cpu_fast/residual_add.h"
#include "kernels/cuda/residual_add.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

using bf16::NativeBf16;

void residual_add(const ExecutionContext& ctx, const Tensor& a, const Tensor& b, const Tensor& y) {
  check_same_layout("residual_add", {{"a", a}, {"b", b}, {"y", y}});
  if (bf16::on_float32(
          ctx, {a, b}, {y},
          [&](const Tensor* in, const Tensor* out) { residual_add(ctx, in[0], in[1], out[0]); },
          NativeBf16::CudaAndCpu)) {
    return;
  }
  dispatch_with_bf16<true>("residual_add", ctx, a, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::residual_add_forward(cuda_stream(ctx), a.data<T>(), b.data<T>(), y.data<T>(), a.numel());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::residual_add_forward(a.data<T>(), b.data<T>(), y.data<T>(), a.numel());
    } else {
      cpu::residual_add_forward<T>(a.data<T>(), b.data<T>(), y.data<T>(), a.numel());
    }
  });
}

}  // namespace engine::ops
