#include "kernels/ops/conv2d.h"

#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cuda/conv2d_cudnn.h"
#include "kernels/cuda/conv2d_implicit_gemm.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void conv2d_forward(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x, const Tensor& w,
                    const Tensor& bias, const Tensor& y) {
  dispatch("conv2d", ctx, x, [&]<Path P, typename T>() {
    const T* b = data_or_null<T>(bias);
    if constexpr (P == Path::Cuda) {
      if (ctx.conv_algorithm == ConvAlgorithm::Cudnn) {
        cuda::conv2d_forward_cudnn(cuda_handles("conv2d", ctx), cuda_stream(ctx), s, x.data<T>(), w.data<T>(),
                                   b, y.data<T>());
      } else {
        cuda::conv2d_forward_implicit_gemm(cuda_stream(ctx), s, x.data<T>(), w.data<T>(), b, y.data<T>());
      }
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::conv2d_forward(s, x.data<T>(), w.data<T>(), b, y.data<T>());
    } else {
      cpu::conv2d_forward<T>(s, x.data<T>(), w.data<T>(), b, y.data<T>());
    }
  });
}

void conv2d_backward(const ExecutionContext& ctx, const Conv2dShape& s, const Tensor& x, const Tensor& w,
                     const Tensor& dy, const Tensor& dx, const Tensor& dw, const Tensor& db) {
  dispatch("conv2d", ctx, dy, [&]<Path P, typename T>() {
    T* dx_data = data_or_null<T>(dx);
    T* db_data = data_or_null<T>(db);
    if constexpr (P == Path::Cuda) {
      if (ctx.conv_algorithm == ConvAlgorithm::Cudnn) {
        cuda::conv2d_backward_cudnn(cuda_handles("conv2d", ctx), cuda_stream(ctx), s, x.data<T>(),
                                    w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db_data);
      } else {
        cuda::conv2d_backward_implicit_gemm(cuda_stream(ctx), s, x.data<T>(), w.data<T>(), dy.data<T>(),
                                            dx_data, dw.data<T>(), db_data);
      }
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::conv2d_backward(s, x.data<T>(), w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db_data);
    } else {
      cpu::conv2d_backward<T>(s, x.data<T>(), w.data<T>(), dy.data<T>(), dx_data, dw.data<T>(), db_data);
    }
  });
}

}  // namespace engine::ops
