#include "kernels/ops/linear.h"

#include "kernels/cpu_fast/linear.h"
#include "kernels/cuda/linear.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void linear_forward(const ExecutionContext& ctx, const LinearShape& s, const Tensor& x, const Tensor& w,
                    const Tensor& bias, const Tensor& y) {
  dispatch("linear", ctx, x, [&]<Path P, typename T>() {
    const T* b = data_or_null<T>(bias);
    if constexpr (P == Path::Cuda) {
      cuda::linear_forward(cuda_handles("linear", ctx), cuda_stream(ctx), s, x.data<T>(), w.data<T>(), b,
                           y.data<T>());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::linear_forward(s, x.data<T>(), w.data<T>(), b, y.data<T>());
    } else {
      cpu::linear_forward<T>(s, x.data<T>(), w.data<T>(), b, y.data<T>());
    }
  });
}

void linear_backward(const ExecutionContext& ctx, const LinearShape& s, const Tensor& x, const Tensor& w,
                     const Tensor& dy, const Tensor& dx, const Tensor& dw, const Tensor& db) {
  dispatch("linear", ctx, dy, [&]<Path P, typename T>() {
    T* dx_data = data_or_null<T>(dx);
    T* db_data = data_or_null<T>(db);
    if constexpr (P == Path::Cuda) {
      cuda::linear_backward(cuda_handles("linear", ctx), cuda_stream(ctx), s, x.data<T>(), w.data<T>(),
                            dy.data<T>(), dx_data, dw.data<T>(), db_data);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::linear_backward(s, x.data<T>(), w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db_data);
    } else {
      cpu::linear_backward<T>(s, x.data<T>(), w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db_data);
    }
  });
}

}  // namespace engine::ops
