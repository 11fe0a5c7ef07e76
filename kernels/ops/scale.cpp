#include "kernels/ops/scale.h"

#include "kernels/cpu/scale.h"
#include "kernels/cpu_fast/scale.h"
#include "kernels/cuda/scale.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void scale(const ExecutionContext& ctx, const Tensor& x, double a, const Tensor& y) {
  check_same_layout("scale", {{"x", x}, {"y", y}});
  if (bf16::on_float32(ctx, {x}, {y},
                       [&](const Tensor* in, const Tensor* out) { scale(ctx, in[0], a, out[0]); })) {
    return;
  }
  dispatch("scale", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::scale(cuda_stream(ctx), x.data<T>(), a, y.data<T>(), x.numel());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::scale(x.data<T>(), a, y.data<T>(), x.numel());
    } else {
      cpu::scale<T>(x.data<T>(), a, y.data<T>(), x.numel());
    }
  });
}

}  // namespace engine::ops
