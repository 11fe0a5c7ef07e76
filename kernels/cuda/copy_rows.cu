#include "kernels/cuda/common.cuh"
#include "kernels/cuda/copy_rows.h"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

__global__ void copy_rows_kernel(RowCopy c, const float* src, float* dst) {
  for (const std::int64_t i : detail::grid_stride(c.rows * c.count)) {
    const std::int64_t r = i / c.count, k = i % c.count;
    dst[r * c.dst_stride + c.dst_offset + k] = src[r * c.src_stride + c.src_offset + k];
  }
}

__global__ void channel_shuffle_kernel(std::int64_t outer, std::int64_t channels, std::int64_t inner,
                                       std::int64_t groups, const float* src, float* dst) {
  const std::int64_t per_group = channels / groups;
  for (const std::int64_t i : detail::grid_stride(outer * channels * inner)) {
    const std::int64_t k = i % inner, c = (i / inner) % channels, o = i / (inner * channels);
    const std::int64_t from = (c % groups) * per_group + c / groups;
    dst[i] = src[(o * channels + from) * inner + k];
  }
}

}  // namespace

void copy_rows(cudaStream_t stream, const RowCopy& c, const float* src, float* dst) {
  ENGINE_NVTX_RANGE("copy_rows");
  c.validate();
  const std::int64_t n = c.rows * c.count;
  if (n == 0) return;
  copy_rows_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(c, src, dst);
  ENGINE_LAUNCH_CHECK();
}

void channel_shuffle(cudaStream_t stream, std::int64_t outer, std::int64_t channels, std::int64_t inner,
                     std::int64_t groups, const float* src, float* dst) {
  ENGINE_NVTX_RANGE("channel_shuffle");
  ENGINE_CHECK(groups > 0 && channels % groups == 0, "channel_shuffle: {} groups of {} channels", groups,
               channels);
  const std::int64_t n = outer * channels * inner;
  if (n == 0) return;
  channel_shuffle_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(outer, channels, inner, groups,
                                                                             src, dst);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
