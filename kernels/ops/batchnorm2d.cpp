#include "kernels/ops/batchnorm2d.h"

#include <cstdint>
#include <vector>

#include "kernels/cpu/relu.h"
#include "kernels/cpu_fast/batchnorm2d.h"
#include "kernels/cpu_fast/batchnorm2d_blocked.h"
#include "kernels/cuda/batchnorm2d.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/nchw_fallback.h"

namespace engine::ops {

using bf16::NativeBf16;
namespace {

std::int64_t elements(const BatchNorm2dShape& s) { return static_cast<std::int64_t>(s.x_size()); }

void check_relu_y(const BatchNorm2dShape& s, const Tensor& dy, const Tensor& relu_y) {
  if (!relu_y.defined()) return;
  ENGINE_CHECK(
      relu_y.numel() == elements(s) && relu_y.device() == dy.device() && relu_y.dtype() == dy.dtype(),
      "batchnorm2d: the fused ReLU's output {} does not match dy {}", relu_y.str(), dy.str());
}

// The reference's fused backward is the composition: ReLU's backward (on the fused output: relu(v) > 0
// exactly when v > 0, the mask ReLU would take from its input), then BatchNorm's backward of that gradient.
template <typename T>
std::vector<T> relu_masked(const BatchNorm2dShape& s, const Tensor& relu_y, const Tensor& dy) {
  std::vector<T> masked(s.x_size());
  cpu::relu_backward<T>(relu_y.data<T>(), dy.data<T>(), masked.data(), elements(s));
  return masked;
}

// The fast CPU kernels take the blocked layouts (cpu_fast/batchnorm2d_blocked.h); the float64 reference runs
// them NCHW through the fallback.
bool fast_blocked(const Tensor& t) { return t.dtype() != DType::F64; }

}  // namespace

void batchnorm2d_forward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                                  const Tensor& gamma, const Tensor& beta, const Tensor& y,
                                  const Tensor& save_mean, const Tensor& save_invstd,
                                  const Tensor& running_mean, const Tensor& running_var, double momentum,
                                  double eps, bool relu, const Tensor& running_mean_shift) {
  if (running_mean_shift.defined()) {
    ENGINE_CHECK(running_mean_shift.numel() == s.c && running_mean_shift.device() == x.device() &&
                     running_mean.defined() && running_mean_shift.dtype() == running_mean.dtype(),
                 "batchnorm2d: the running-mean shift {} does not match x {} (or there are no running "
                 "statistics to shift)",
                 running_mean_shift.str(), x.str());
  }
  const Layout layout = same_layout("batchnorm2d", {{"x", x}, {"y", y}});
  if (needs_nchw_fallback(x, /*cuda_has_nhwc=*/true, fast_blocked(x))) {
    NchwFallback nchw(ctx);
    batchnorm2d_forward_training(ctx, s, nchw.in(x), gamma, beta, nchw.out(y), save_mean, save_invstd,
                                 running_mean, running_var, momentum, eps, relu, running_mean_shift);
    nchw.finish();
    return;
  }
  if (bf16::on_float32(
          ctx, {x}, {y},
          [&](const Tensor* in, const Tensor* out) {
            batchnorm2d_forward_training(ctx, s, in[0], gamma, beta, out[0], save_mean, save_invstd,
                                         running_mean, running_var, momentum, eps, relu, running_mean_shift);
          },
          NativeBf16::CudaAndCpu)) {
    return;
  }
  // The parameters and statistics are float32 whatever the activations' storage T (bf16 on CUDA and CPU).
  dispatch_with_bf16<true>("batchnorm2d", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::batchnorm2d_forward_training(
          cuda_stream(ctx), s, x.data<T>(), gamma.data<float>(), beta.data<float>(), y.data<T>(),
          save_mean.data<float>(), save_invstd.data<float>(), running_mean.data<float>(),
          running_var.data<float>(), momentum, eps, relu, data_or_null<float>(running_mean_shift), layout);
    } else if constexpr (P == Path::CpuFast) {
      if (is_blocked(layout)) {
        cpu_fast::batchnorm2d_forward_training_blocked(
            layout_block(layout), s, x.data<T>(), data_or_null<float>(gamma), data_or_null<float>(beta),
            y.data<T>(), save_mean.data<float>(), save_invstd.data<float>(),
            data_or_null<float>(running_mean), data_or_null<float>(running_var), momentum, eps, relu,
            data_or_null<float>(running_mean_shift));
        return;
      }
      cpu_fast::batchnorm2d_forward_training(s, x.data<T>(), gamma.data<float>(), beta.data<float>(),
                                             y.data<T>(), save_mean.data<float>(), save_invstd.data<float>(),
                                             running_mean.data<float>(), running_var.data<float>(), momentum,
                                             eps, relu, data_or_null<float>(running_mean_shift));
    } else {
      cpu::batchnorm2d_forward_training<T>(s, x.data<T>(), gamma.data<T>(), beta.data<T>(), y.data<T>(),
                                           save_mean.data<T>(), save_invstd.data<T>(), running_mean.data<T>(),
                                           running_var.data<T>(), momentum, eps,
                                           data_or_null<T>(running_mean_shift));
      if (relu) cpu::relu_forward<T>(y.data<T>(), y.data<T>(), elements(s));
    }
  });
}

void batchnorm2d_forward_eval(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                              const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& y, double eps, bool relu) {
  const Layout layout = same_layout("batchnorm2d", {{"x", x}, {"y", y}});
  if (needs_nchw_fallback(x, /*cuda_has_nhwc=*/true, fast_blocked(x))) {
    NchwFallback nchw(ctx);
    batchnorm2d_forward_eval(ctx, s, nchw.in(x), gamma, beta, running_mean, running_var, nchw.out(y), eps,
                             relu);
    nchw.finish();
    return;
  }
  if (bf16::on_float32(
          ctx, {x}, {y},
          [&](const Tensor* in, const Tensor* out) {
            batchnorm2d_forward_eval(ctx, s, in[0], gamma, beta, running_mean, running_var, out[0], eps,
                                     relu);
          },
          NativeBf16::CudaAndCpu)) {
    return;
  }
  dispatch_with_bf16<true>("batchnorm2d", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::batchnorm2d_forward_eval(cuda_stream(ctx), s, x.data<T>(), gamma.data<float>(),
                                     beta.data<float>(), running_mean.data<float>(),
                                     running_var.data<float>(), y.data<T>(), eps, relu, layout);
    } else if constexpr (P == Path::CpuFast) {
      if (is_blocked(layout)) {
        cpu_fast::batchnorm2d_forward_eval_blocked(
            layout_block(layout), s, x.data<T>(), data_or_null<float>(gamma), data_or_null<float>(beta),
            running_mean.data<float>(), running_var.data<float>(), y.data<T>(), eps, relu);
        return;
      }
      cpu_fast::batchnorm2d_forward_eval(s, x.data<T>(), gamma.data<float>(), beta.data<float>(),
                                         running_mean.data<float>(), running_var.data<float>(), y.data<T>(),
                                         eps, relu);
    } else {
      cpu::batchnorm2d_forward_eval<T>(s, x.data<T>(), gamma.data<T>(), beta.data<T>(),
                                       running_mean.data<T>(), running_var.data<T>(), y.data<T>(), eps);
      if (relu) cpu::relu_forward<T>(y.data<T>(), y.data<T>(), elements(s));
    }
  });
}

void batchnorm2d_backward_training(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                                   const Tensor& gamma, const Tensor& save_mean, const Tensor& save_invstd,
                                   const Tensor& dy, const Tensor& dx, const Tensor& dgamma,
                                   const Tensor& dbeta, const Tensor& relu_y) {
  if (bf16::on_float32(
          ctx, {x, dy, relu_y}, {dx},
          [&](const Tensor* in, const Tensor* out) {
            batchnorm2d_backward_training(ctx, s, in[0], gamma, save_mean, save_invstd, in[1], out[0], dgamma,
                                          dbeta, in[2]);
          },
          NativeBf16::CudaAndCpu)) {
    return;
  }
  check_relu_y(s, dy, relu_y);
  const Layout layout = same_layout("batchnorm2d", {{"x", x}, {"dy", dy}, {"dx", dx}, {"relu_y", relu_y}});
  if (needs_nchw_fallback(dy, /*cuda_has_nhwc=*/true, fast_blocked(dy))) {
    NchwFallback nchw(ctx);
    batchnorm2d_backward_training(ctx, s, nchw.in(x), gamma, save_mean, save_invstd, nchw.in(dy),
                                  nchw.out(dx), dgamma, dbeta, nchw.in(relu_y));
    nchw.finish();
    return;
  }
  dispatch_with_bf16<true>("batchnorm2d", ctx, dy, [&]<Path P, typename T>() {
    T* dx_data = data_or_null<T>(dx);
    const T* relu_y_data = data_or_null<T>(relu_y);
    if constexpr (P == Path::Cuda) {
      cuda::batchnorm2d_backward_training(cuda_stream(ctx), s, x.data<T>(), gamma.data<float>(),
                                          save_mean.data<float>(), save_invstd.data<float>(), dy.data<T>(),
                                          dx_data, dgamma.data<float>(), dbeta.data<float>(), relu_y_data,
                                          layout);
    } else if constexpr (P == Path::CpuFast) {
      if (is_blocked(layout)) {
        cpu_fast::batchnorm2d_backward_training_blocked(
            layout_block(layout), s, x.data<T>(), data_or_null<float>(gamma), save_mean.data<float>(),
            save_invstd.data<float>(), dy.data<T>(), dx_data, data_or_null<float>(dgamma),
            data_or_null<float>(dbeta), relu_y_data);
        return;
      }
      cpu_fast::batchnorm2d_backward_training(s, x.data<T>(), gamma.data<float>(), save_mean.data<float>(),
                                              save_invstd.data<float>(), dy.data<T>(), dx_data,
                                              dgamma.data<float>(), dbeta.data<float>(), relu_y_data);
    } else {
      std::vector<T> masked;
      if (relu_y.defined()) masked = relu_masked<T>(s, relu_y, dy);
      cpu::batchnorm2d_backward_training<T>(
          s, x.data<T>(), gamma.data<T>(), save_mean.data<T>(), save_invstd.data<T>(),
          relu_y.defined() ? masked.data() : dy.data<T>(), dx_data, dgamma.data<T>(), dbeta.data<T>());
    }
  });
}

void batchnorm2d_backward_eval(const ExecutionContext& ctx, const BatchNorm2dShape& s, const Tensor& x,
                               const Tensor& gamma, const Tensor& running_mean, const Tensor& running_var,
                               const Tensor& dy, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                               double eps, const Tensor& relu_y) {
  if (bf16::on_float32(
          ctx, {x, dy, relu_y}, {dx},
          [&](const Tensor* in, const Tensor* out) {
            batchnorm2d_backward_eval(ctx, s, in[0], gamma, running_mean, running_var, in[1], out[0], dgamma,
                                      dbeta, eps, in[2]);
          },
          NativeBf16::CudaAndCpu)) {
    return;
  }
  check_relu_y(s, dy, relu_y);
  const Layout layout = same_layout("batchnorm2d", {{"x", x}, {"dy", dy}, {"dx", dx}, {"relu_y", relu_y}});
  if (needs_nchw_fallback(dy, /*cuda_has_nhwc=*/true, fast_blocked(dy))) {
    NchwFallback nchw(ctx);
    batchnorm2d_backward_eval(ctx, s, nchw.in(x), gamma, running_mean, running_var, nchw.in(dy), nchw.out(dx),
                              dgamma, dbeta, eps, nchw.in(relu_y));
    nchw.finish();
    return;
  }
  dispatch_with_bf16<true>("batchnorm2d", ctx, dy, [&]<Path P, typename T>() {
    T* dx_data = data_or_null<T>(dx);
    const T* relu_y_data = data_or_null<T>(relu_y);
    if constexpr (P == Path::Cuda) {
      cuda::batchnorm2d_backward_eval(cuda_stream(ctx), s, x.data<T>(), gamma.data<float>(),
                                      running_mean.data<float>(), running_var.data<float>(), dy.data<T>(),
                                      dx_data, dgamma.data<float>(), dbeta.data<float>(), eps, relu_y_data,
                                      layout);
    } else if constexpr (P == Path::CpuFast) {
      if (is_blocked(layout)) {
        cpu_fast::batchnorm2d_backward_eval_blocked(
            layout_block(layout), s, x.data<T>(), data_or_null<float>(gamma), running_mean.data<float>(),
            running_var.data<float>(), dy.data<T>(), dx_data, data_or_null<float>(dgamma),
            data_or_null<float>(dbeta), eps, relu_y_data);
        return;
      }
      cpu_fast::batchnorm2d_backward_eval(s, x.data<T>(), gamma.data<float>(), running_mean.data<float>(),
                                          running_var.data<float>(), dy.data<T>(), dx_data,
                                          dgamma.data<float>(), dbeta.data<float>(), eps, relu_y_data);
    } else {
      std::vector<T> masked;
      if (relu_y.defined()) masked = relu_masked<T>(s, relu_y, dy);
      cpu::batchnorm2d_backward_eval<T>(
          s, x.data<T>(), gamma.data<T>(), running_mean.data<T>(), running_var.data<T>(),
          relu_y.defined() ? masked.data() : dy.data<T>(), dx_data, dgamma.data<T>(), dbeta.data<T>(), eps);
    }
  });
}

}  // namespace engine::ops
