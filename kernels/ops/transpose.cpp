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

// The matrices of one layout change: each of `batch` [rows, cols] matrices of src is transposed into dst.
// NCHW <-> NHWC: each image's [C, HW] and [HW, C]. NCHW <-> a blocked layout (b channels a block): each
// block's [b, HW] rows, contiguous in NCHW, and its [HW, b] cells, contiguous in nChw<b>c at the same offset.
struct Matrices {
  std::int64_t batch, rows, cols;
};

Matrices matrices_of(const Tensor& src, const Tensor& dst) {
  const std::int64_t n = src.dim(0), c = src.dim(1), hw = src.dim(2) * src.dim(3);
  if (dst.layout() == Layout::NHWC) return {n, c, hw};
  if (src.layout() == Layout::NHWC) return {n, hw, c};
  if (is_blocked(dst.layout())) {
    const int b = layout_block(dst.layout());
    return {n * (c / b), b, hw};
  }
  const int b = layout_block(src.layout());
  return {n * (c / b), hw, b};
}

}  // namespace

void transpose_layout(const ExecutionContext& ctx, const Tensor& src, const Tensor& dst) {
  ENGINE_CHECK(src.defined() && dst.defined() && src.ndim() == 4 && src.shape() == dst.shape() &&
                   src.dtype() == dst.dtype() && src.device() == dst.device() && src.layout() != dst.layout(),
               "transpose_layout: {} into {}: expected two 4-d tensors of one shape, dtype and device in "
               "different layouts",
               src.str(), dst.str());
  if (src.layout() != Layout::NCHW && dst.layout() != Layout::NCHW) {  // through NCHW (CPU: blocked <-> NHWC)
    const Tensor nchw = to_layout(ctx, src, Layout::NCHW);
    transpose_layout(ctx, nchw, dst);
    return;
  }
  const auto [batch, rows, cols] = matrices_of(src, dst);
  const std::size_t bytes = dtype_size(src.dtype());
  if (src.is_cuda()) {
    if constexpr (kHaveCuda) {
      cuda::batched_transpose(cuda_stream(ctx), batch, rows, cols, bytes, src.raw_data(), dst.raw_data());
      return;
    } else {
      ENGINE_FAIL("transpose_layout: a CUDA tensor, but this build has no CUDA device");
    }
  }
  switch (bytes) {
    case 2: transpose_cpu<std::uint16_t>(batch, rows, cols, src, dst); return;
    case 4: transpose_cpu<std::uint32_t>(batch, rows, cols, src, dst); return;
    case 8: transpose_cpu<std::uint64_t>(batch, rows, cols, src, dst); return;
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
