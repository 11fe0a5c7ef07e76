#pragma once
// Per-channel sums over NHWC data in double, deterministic (internal; the NHWC batch norm and conv bias
// gradient). The NHWC counterpart of channel_reduce.cuh, with the same functor contract (op(offset, c, acc),
// finish(c, totals)) and the same fixed-order finish by the last block to arrive; only the walk differs,
// because the M = N*H*W values of a channel are now the rows of an [M, C] matrix (C contiguous values per
// row).
//
// Block (32, 8) owns 32 channels and one chunk of the rows: thread (tx, ty) sums rows begin+ty, begin+ty+8,
// ... of channel c0+tx (a warp reads 32 consecutive channels of one row: coalesced), then thread row 0 adds
// the 8 row partials in order and writes the chunk's partial to partial[(c * chunks + j) * kValues + v].
// Grid (ceil(C / 32), chunks). The last block of a channel tile to arrive (one counter per tile, after a
// memory fence) adds each channel's chunk partials in increasing j and calls finish. The chunk count depends
// on the shape only, and no atomics touch the sums: the same inputs give the same bits every run.

#include "kernels/cuda/common.cuh"

namespace engine::cuda::detail {

inline constexpr int kNhwcTileChannels = 32;
inline constexpr int kNhwcTileRows = 8;

// Chunks of at least 1024 rows, at most 128 per channel tile: enough blocks for a GPU when C is small.
inline int nhwc_channel_chunks(std::int64_t m) {
  return static_cast<int>(std::clamp<std::int64_t>(ceil_div(m, 1024), 1, 128));
}

template <int kValues, typename Op, typename Finish>
__global__ void __launch_bounds__(kNhwcTileChannels* kNhwcTileRows)
    channel_reduce_nhwc_kernel(int c_count, int m, int chunks, Op op, Finish finish, double* partial,
                               int* arrived) {
  __shared__ double row_partials[kValues][kNhwcTileRows][kNhwcTileChannels];
  __shared__ bool last_block;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int c = static_cast<int>(blockIdx.x) * kNhwcTileChannels + tx;
  const int chunk = static_cast<int>(blockIdx.y);
  const int per_chunk = static_cast<int>((static_cast<std::int64_t>(m) + chunks - 1) / chunks);
  const int begin = chunk * per_chunk;
  const int end = min(m, begin + per_chunk);
  double acc[kValues];
#pragma unroll
  for (int v = 0; v < kValues; ++v) acc[v] = 0.0;
  if (c < c_count) {
    for (int r = begin + ty; r < end; r += kNhwcTileRows)
      op(static_cast<std::int64_t>(r) * c_count + c, c, acc);
  }
#pragma unroll
  for (int v = 0; v < kValues; ++v) row_partials[v][ty][tx] = acc[v];
  __syncthreads();
  if (ty == 0 && c < c_count) {
    const std::int64_t at = (static_cast<std::int64_t>(c) * chunks + chunk) * kValues;
#pragma unroll
    for (int v = 0; v < kValues; ++v) {
      double total = 0.0;
      for (int t = 0; t < kNhwcTileRows; ++t) total += row_partials[v][t][tx];
      partial[at + v] = total;
    }
  }
  __threadfence();  // this thread's partials are visible device-wide before the block's arrival is counted
  __syncthreads();
  if (tx == 0 && ty == 0) last_block = atomicAdd(arrived + blockIdx.x, 1) == chunks - 1;
  __syncthreads();
  if (!last_block || ty != 0 || c >= c_count) return;
  __threadfence();  // and the last block reads every other block's partials after seeing the count
  double sums[kValues];
#pragma unroll
  for (int v = 0; v < kValues; ++v) sums[v] = 0.0;
  const std::int64_t row = static_cast<std::int64_t>(c) * chunks;
  for (int j = 0; j < chunks; ++j) {
#pragma unroll
    for (int v = 0; v < kValues; ++v) sums[v] += __ldcg(partial + (row + j) * kValues + v);  // L2, not L1
  }
  finish(c, sums);
}

// The sums over the m rows of an [m, c] matrix and their finish, in one kernel (scratch for the partials
// and the per-tile arrival counters from the caching allocator, the counters zeroed on `stream`).
template <int kValues, typename Op, typename Finish>
void launch_channel_reduce_nhwc(cudaStream_t stream, std::int64_t m, int c, const Op& op,
                                const Finish& finish, const char* what) {
  check_fits_int(m, "N*H*W", what);
  check_fits_int(m * c, "N*C*H*W", what);
  const int chunks = nhwc_channel_chunks(m);
  const int tiles = static_cast<int>(ceil_div(c, kNhwcTileChannels));
  Tensor partial = scratch<double>(static_cast<std::int64_t>(kValues) * c * chunks, stream);
  Tensor arrived = scratch<std::int32_t>(tiles, stream);
  CUDA_CHECK(cudaMemsetAsync(arrived.data<std::int32_t>(), 0,
                             sizeof(std::int32_t) * static_cast<std::size_t>(tiles), stream));
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks));
  const dim3 block(kNhwcTileChannels, kNhwcTileRows);
  channel_reduce_nhwc_kernel<kValues, Op, Finish><<<grid, block, 0, stream>>>(
      c, static_cast<int>(m), chunks, op, finish, partial.data<double>(), arrived.data<std::int32_t>());
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda::detail
