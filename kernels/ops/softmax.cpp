#include "kernels/ops/softmax.h"

#include <initializer_list>
#include <utility>

#include "core/error.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cpu_fast/softmax.h"
#include "kernels/cuda/softmax.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

namespace {

// [rows, k] from a 2-d tensor whose partners have its shape.
std::pair<std::int64_t, std::int64_t> rows_and_k(
    std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  const Tensor& first = *ts.begin()->second;
  ENGINE_CHECK(first.ndim() == 2 && first.dim(1) >= 1,
               "softmax: {} must be 2-d [rows, k] with k >= 1 (a classifier's [N, classes]), got {}",
               ts.begin()->first, first.str());
  for (const auto& [name, t] : ts) {
    ENGINE_CHECK(t->shape() == first.shape(), "softmax: {} has shape {}, {} has {}", name, t->str(),
                 ts.begin()->first, first.str());
  }
  return {first.dim(0), first.dim(1)};
}

}  // namespace

void softmax_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& y) {
  // Plain variables, not a structured binding: a lambda may not capture one (clang before 16 refuses that).
  const std::pair<std::int64_t, std::int64_t> size = rows_and_k({{"x", &x}, {"y", &y}});
  const std::int64_t rows = size.first, k = size.second;
  if (bf16::on_float32(ctx, {x}, {y},
                       [&](const Tensor* in, const Tensor* out) { softmax_forward(ctx, in[0], out[0]); })) {
    return;
  }
  dispatch("softmax", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::softmax_forward(cuda_stream(ctx), x.data<T>(), y.data<T>(), rows, k);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::softmax_forward(x.data<T>(), y.data<T>(), rows, k);
    } else {
      cpu::softmax_forward<T>(x.data<T>(), y.data<T>(), rows, k);
    }
  });
}

void softmax_backward(const ExecutionContext& ctx, const Tensor& y, const Tensor& dy, const Tensor& dx) {
  const std::pair<std::int64_t, std::int64_t> size = rows_and_k({{"y", &y}, {"dy", &dy}, {"dx", &dx}});
  const std::int64_t rows = size.first, k = size.second;
  if (bf16::on_float32(ctx, {y, dy}, {dx}, [&](const Tensor* in, const Tensor* out) {
        softmax_backward(ctx, in[0], in[1], out[0]);
      })) {
    return;
  }
  dispatch("softmax", ctx, dy, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::softmax_backward(cuda_stream(ctx), y.data<T>(), dy.data<T>(), dx.data<T>(), rows, k);
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::softmax_backward(y.data<T>(), dy.data<T>(), dx.data<T>(), rows, k);
    } else {
      cpu::softmax_backward<T>(y.data<T>(), dy.data<T>(), dx.data<T>(), rows, k);
    }
  });
}

}  // namespace engine::ops
