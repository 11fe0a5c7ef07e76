#pragma once
// Per-channel sums over NCHW data in double, deterministic (internal; used by batch norm and the bias
// gradient).
//
// Channel c of x[N, C, HW] holds M = N*HW values. The grid is (C, chunks): block (c, j) sums chunk j of
// channel c's M values (each thread a strided subset, then a fixed-order block tree) and writes its partial
// sums to partial[(c * chunks + j) * kValues + v]. The chunk count depends on the shape only (not on the
// device), so results are the same on every GPU model. No atomics touch the sums: the same inputs give the
// same bits every run.
//
// The finish is in the same kernel: the last block of a channel to finish (a per-channel arrival counter,
// after a memory fence) adds the channel's partials in increasing j and hands the totals to a `finish`
// functor. Which block arrives last varies run to run, but the order of the additions does not:
// deterministic.
//
// The per-element work is a functor: op(offset, c, out) adds its kValues contributions for the element at
// flat offset `offset` (channel c) into out[0..kValues). finish(c, totals) gets the channel's kValues sums.
// The element walk steps image and cell incrementally: no per-element division.

#include "kernels/cuda/common.cuh"

namespace engine::cuda::detail {

// Chunks of at least 4096 values (so a block has work), at most 64 per channel (so the finishing loop is
// short); a CIFAR-sized batch (M = 128*32*32) gets 32 chunks per channel.
inline int channel_chunks(std::int64_t m) {
  return static_cast<int>(std::clamp<std::int64_t>(ceil_div(m, 4096), 1, 64));
}

// This block's sums of its chunk of channel blockIdx.x; thread 0 gets the totals in `total`.
template <int kValues, typename Op>
__device__ __forceinline__ void chunk_sums(int c_count, int hw, int m, int chunks, const Op& op,
                                           double (&total)[kValues]) {
  __shared__ double shared[kWarp];
  const int c = static_cast<int>(blockIdx.x);
  const int chunk = static_cast<int>(blockIdx.y);
  const int per_chunk = static_cast<int>((static_cast<std::int64_t>(m) + chunks - 1) / chunks);
  const int begin = chunk * per_chunk;
  const int end = min(m, begin + per_chunk);
  double acc[kValues];
#pragma unroll
  for (int v = 0; v < kValues; ++v) acc[v] = 0.0;
  // Index i of the channel's values = img * hw + cell; one division to start, then fixed increments.
  const int step = static_cast<int>(blockDim.x);
  const int step_img = step / hw, step_cell = step % hw;
  int i = begin + static_cast<int>(threadIdx.x);
  int img = i / hw, cell = i % hw;
  for (; i < end; i += step) {
    op((static_cast<std::int64_t>(img) * c_count + c) * hw + cell, c, acc);
    img += step_img;
    cell += step_cell;
    if (cell >= hw) {
      cell -= hw;
      ++img;
    }
  }
#pragma unroll
  for (int v = 0; v < kValues; ++v) total[v] = block_sum(acc[v], shared);
}

template <int kValues, typename Op, typename Finish>
__global__ void __launch_bounds__(kBlock)
    channel_reduce_kernel(int c_count, int hw, int m, int chunks, Op op, Finish finish, double* partial,
                          int* arrived) {
  double total[kValues];
  chunk_sums<kValues>(c_count, hw, m, chunks, op, total);
  if (threadIdx.x != 0) return;  // the rest is thread 0's: no __syncthreads below
  const int c = static_cast<int>(blockIdx.x);
  const std::int64_t row = static_cast<std::int64_t>(c) * chunks;
#pragma unroll
  for (int v = 0; v < kValues; ++v) partial[(row + blockIdx.y) * kValues + v] = total[v];
  __threadfence();  // the partials are visible device-wide before the arrival is counted
  if (atomicAdd(arrived + c, 1) != chunks - 1) return;
  __threadfence();  // and the last block reads every other block's partials after seeing the count
  double sums[kValues];
#pragma unroll
  for (int v = 0; v < kValues; ++v) sums[v] = 0.0;
  for (int j = 0; j < chunks; ++j) {
#pragma unroll
    for (int v = 0; v < kValues; ++v) sums[v] += __ldcg(partial + (row + j) * kValues + v);  // L2, not L1
  }
  finish(c, sums);
}

// The sums and their finish in one kernel (scratch for the partials and the arrival counters from the
// caching allocator; the counters zeroed by one memset on `stream`).
template <int kValues, typename Op, typename Finish>
void launch_channel_reduce(cudaStream_t stream, int n, int c, int hw, int chunks, const Op& op,
                           const Finish& finish, const char* what) {
  const std::int64_t m = static_cast<std::int64_t>(n) * hw;
  check_fits_int(m, "N*H*W", what);
  check_fits_int(m * c, "N*C*H*W", what);
  Tensor partial = scratch<double>(static_cast<std::int64_t>(kValues) * c * chunks, stream);
  Tensor arrived = scratch<std::int32_t>(c, stream);
  CUDA_CHECK(cudaMemsetAsync(arrived.data<std::int32_t>(), 0,
                             sizeof(std::int32_t) * static_cast<std::size_t>(c), stream));
  const dim3 grid(static_cast<unsigned>(c), static_cast<unsigned>(chunks));
  channel_reduce_kernel<kValues, Op, Finish><<<grid, kBlock, 0, stream>>>(
      c, hw, static_cast<int>(m), chunks, op, finish, partial.data<double>(), arrived.data<std::int32_t>());
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda::detail
