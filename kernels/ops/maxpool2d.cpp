#include "kernels/ops/maxpool2d.h"

#include <cstdint>

#include "kernels/cpu_fast/maxpool2d.h"
#include "kernels/cuda/maxpool2d.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void maxpool2d_forward(const ExecutionContext& ctx, const Pool2dShape& s, const Tensor& x, const Tensor& y,
                       const Tensor& argmax) {
  dispatch("maxpool2d", ctx, x, [&]<Path P, typename T>() {
    auto* am = argmax.data<std::int32_t>();
    if constexpr (P == Path::Cuda) {
      cuda::maxpool2d_forward(cuda_stream(ctx), s, x.data<T>(), y.data<T>(), am);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::maxpool2d_forward(s, x.data<T>(), y.data<T>(), am);
    } else {
      cpu::maxpool2d_forward<T>(s, x.data<T>(), y.data<T>(), am);
    }
  });
}

void maxpool2d_backward(const ExecutionContext& ctx, const Pool2dShape& s, const Tensor& dy,
                        const Tensor& argmax, const Tensor& dx) {
  dispatch("maxpool2d", ctx, dy, [&]<Path P, typename T>() {
    const auto* am = argmax.data<std::int32_t>();
    if constexpr (P == Path::Cuda) {
      cuda::maxpool2d_backward(cuda_stream(ctx), s, dy.data<T>(), am, dx.data<T>());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::maxpool2d_backward(s, dy.data<T>(), am, dx.data<T>());
    } else {
      cpu::maxpool2d_backward<T>(s, dy.data<T>(), am, dx.data<T>());
    }
  });
}

}  // namespace engine::ops
