#include "kernels/ops/batchnorm2d.h"

#include "kernels/cpu_fast/batchnorm2d.h"
#include "kernels/cuda/batchnorm2d.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void batchnorm2d_forward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                                  const Tensor& gamma, const Tensor& beta, const Tensor& y,
                                  const Tensor& save_mean, const Tensor& save_invstd,
                                  const Tensor& running_mean, const Tensor& running_var, double momentum,
                                  double eps) {
  dispatch("batchnorm2d", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::batchnorm2d_forward_training(cuda_stream(ctx), s, x.data<T>(), gamma.data<T>(), beta.data<T>(),
                                         y.data<T>(), save_mean.data<T>(), save_invstd.data<T>(),
                                         running_mean.data<T>(), running_var.data<T>(), momentum, eps);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::batchnorm2d_forward_training(s, x.data<T>(), gamma.data<T>(), beta.data<T>(), y.data<T>(),
                                             save_mean.data<T>(), save_invstd.data<T>(),
                                             running_mean.data<T>(), running_var.data<T>(), momentum, eps);
    } else {
      cpu::batchnorm2d_forward_training<T>(s, x.data<T>(), gamma.data<T>(), beta.data<T>(), y.data<T>(),
                                           save_mean.data<T>(), save_invstd.data<T>(), running_mean.data<T>(),
                                           running_var.data<T>(), momentum, eps);
    }
  });
}

void batchnorm2d_forward_eval(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                              const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& y, double eps) {
  dispatch("batchnorm2d", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::batchnorm2d_forward_eval(cuda_stream(ctx), s, x.data<T>(), gamma.data<T>(), beta.data<T>(),
                                     running_mean.data<T>(), running_var.data<T>(), y.data<T>(), eps);
    } else {  // no fast eval kernel: the reference's float instantiation
      cpu::batchnorm2d_forward_eval<T>(s, x.data<T>(), gamma.data<T>(), beta.data<T>(),
                                       running_mean.data<T>(), running_var.data<T>(), y.data<T>(), eps);
    }
  });
}

void batchnorm2d_backward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                                   const Tensor& gamma, const Tensor& save_mean, const Tensor& save_invstd,
                                   const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                                   const Tensor& dbeta) {
  dispatch("batchnorm2d", ctx, dy, [&]<Path P, typename T>() {
    T* dx_data = data_or_null<T>(dx);
    if constexpr (P == Path::Cuda) {
      cuda::batchnorm2d_backward_training(cuda_stream(ctx), s, x.data<T>(), gamma.data<T>(),
                                          save_mean.data<T>(), save_invstd.data<T>(), dy.data<T>(), dx_data,
                                          dgamma.data<T>(), dbeta.data<T>());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::batchnorm2d_backward_training(s, x.data<T>(), gamma.data<T>(), save_mean.data<T>(),
                                              save_invstd.data<T>(), dy.data<T>(), dx_data, dgamma.data<T>(),
                                              dbeta.data<T>());
    } else {
      cpu::batchnorm2d_backward_training<T>(s, x.data<T>(), gamma.data<T>(), save_mean.data<T>(),
                                            save_invstd.data<T>(), dy.data<T>(), dx_data, dgamma.data<T>(),
                                            dbeta.data<T>());
    }
  });
}

void batchnorm2d_backward_eval(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                               const Tensor& gamma, const Tensor& running_mean, const Tensor& running_var,
                               const Tensor& dy, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                               double eps) {
  dispatch("batchnorm2d", ctx, dy, [&]<Path P, typename T>() {
    T* dx_data = data_or_null<T>(dx);
    if constexpr (P == Path::Cuda) {
      cuda::batchnorm2d_backward_eval(cuda_stream(ctx), s, x.data<T>(), gamma.data<T>(),
                                      running_mean.data<T>(), running_var.data<T>(), dy.data<T>(), dx_data,
                                      dgamma.data<T>(), dbeta.data<T>(), eps);
    } else {
      cpu::batchnorm2d_backward_eval<T>(s, x.data<T>(), gamma.data<T>(), running_mean.data<T>(),
                                        running_var.data<T>(), dy.data<T>(), dx_data, dgamma.data<T>(),
                                        dbeta.data<T>(), eps);
    }
  });
}

}  // namespace engine::ops
