#include "kernels/ops/transpose.h"

#include <cstdint>

#include "kernels/cpu/transpose.h"
#include "kernels/cuda/transpose.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {
namespace {

template <typename T>
void transpose_cpu(std::int64_t batch, std::int64_t rows, std::int64_t cols, const Tensor& src,
                   const Tensor& dst) {
  cpu::batched_transpose(batch, rows, cols, static_cast<const T*>(src.raw_data()),
                         static_cast<T*>(dst.raw_data()));
}

}  // namespace

void transpose_layout(const ExecutionContext& ctx, const Tensor& src, const Tensor& dst) {
  ENGINE_CHECK(src.defined() && dst.defined() && src.ndim() == 4 && src.shape() == dst.shape() &&
                   src.dtype() == dst.dtype() && src.device() == dst.device() && src.layout() != dst.layout(),
               "transpose_layout: {} into {}: expected two 4-d tensors of one shape, dtype and device in "
               "opposite layouts",
               src.str(), dst.str());
  const std::int64_t n = src.dim(0), c = src.dim(1), hw = src.dim(2) * src.dim(3);
  // Each image is a [C, HW] matrix in NCHW and its transpose [HW, C] in NHWC.
  const bool to_nhwc = dst.layout() == Layout::NHWC;
  const std::int64_t rows = to_nhwc ? c : hw, cols = to_nhwc ? hw : c;
  const std::size_t bytes = dtype_size(src.dtype());
  if (src.is_cuda()) {
    if constexpr (kHaveCuda) {
      cuda::batched_transpose(cuda_stream(ctx), n, rows, cols, bytes, src.raw_data(), dst.raw_data());
      return;
    } else {
      ENGINE_FAIL("transpose_layout: a CUDA tensor, but this build has no CUDA device");
    }
  }
  switch (bytes) {
    case 2: transpose_cpu<std::uint16_t>(n, rows, cols, src, dst); return;
    case 4: transpose_cpu<std::uint32_t>(n, rows, cols, src, dst); return;
    case 8: transpose_cpu<std::uint64_t>(n, rows, cols, src, dst); return;
    default: ENGINE_FAIL("transpose_layout: {} has elements of {} bytes (2, 4 or 8 only)", src.str(), bytes);
  }
}

Tensor to_layout(const ExecutionContext& ctx, const Tensor& t, Layout layout) {
  if (!t.defined() || t.ndim() != 4 || t.layout() == layout) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device(), ctx.stream, layout);
  transpose_layout(ctx, t, out);
  return out;
}

}  // namespace engine::ops
