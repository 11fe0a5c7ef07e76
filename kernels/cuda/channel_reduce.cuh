#pragma once
// Per-channel sums over NCHW data in double, deterministic (internal; used by batch norm and the bias
// gradient).
//
// Channel c of x[N, C, HW] holds M = N*HW values. The grid is (C, chunks): block (c, j) sums chunk j of
// channel c's M values (each thread a strided subset, then a fixed-order block tree) and writes its partial
// sums to partial[(c * chunks + j) * kValues + v]. A finishing kernel then adds a channel's `chunks`
// partials in increasing j. No atomics: the same inputs give the same bits every run. The chunk count
// depends on the shape only (not on the device), so results are also the same on every GPU model.
//
// The per-element work is a functor: op(offset, c, out) adds its kValues contributions for the element at
// flat offset `offset` (channel c) into out[0..kValues).

#include "kernels/cuda/common.cuh"

namespace engine::cuda::detail {

// Chunks of at least 4096 values (so a block has work), at most 64 per channel (so the finishing loop is
// short); a CIFAR-sized batch (M = 128*32*32) gets 32 chunks per channel.
inline int channel_chunks(std::int64_t m) {
  return static_cast<int>(std::clamp<std::int64_t>(ceil_div(m, 4096), 1, 64));
}

template <int kValues, typename Op>
__global__ void __launch_bounds__(kBlock)
    channel_partial_sums_kernel(int c_count, int hw, int m, int chunks, Op op, double* partial) {
  __shared__ double shared[kWarp];
  const int c = static_cast<int>(blockIdx.x);
  const int chunk = static_cast<int>(blockIdx.y);
  const int per_chunk = static_cast<int>((static_cast<std::int64_t>(m) + chunks - 1) / chunks);
  const int begin = chunk * per_chunk;
  const int end = min(m, begin + per_chunk);
  double acc[kValues];
#pragma unroll
  for (int v = 0; v < kValues; ++v) acc[v] = 0.0;
  for (int i = begin + static_cast<int>(threadIdx.x); i < end; i += static_cast<int>(blockDim.x)) {
    const unsigned img = static_cast<unsigned>(i) / static_cast<unsigned>(hw);
    const unsigned cell = static_cast<unsigned>(i) - img * static_cast<unsigned>(hw);
    const std::int64_t offset = (static_cast<std::int64_t>(img) * c_count + c) * hw + cell;
    op(offset, c, acc);
  }
#pragma unroll
  for (int v = 0; v < kValues; ++v) {
    const double total = block_sum(acc[v], shared);
    if (threadIdx.x == 0) partial[(static_cast<std::int64_t>(c) * chunks + chunk) * kValues + v] = total;
  }
}

// Launches the partial sums; the caller finishes them. n*hw must fit in int (checked).
template <int kValues, typename Op>
void launch_channel_partial_sums(cudaStream_t stream, int n, int c, int hw, int chunks, const Op& op,
                                 double* partial, const char* what) {
  const std::int64_t m = static_cast<std::int64_t>(n) * hw;
  check_fits_int(m, "N*H*W", what);
  check_fits_int(m * c, "N*C*H*W", what);
  const dim3 grid(static_cast<unsigned>(c), static_cast<unsigned>(chunks));
  channel_partial_sums_kernel<kValues, Op>
      <<<grid, kBlock, 0, stream>>>(c, hw, static_cast<int>(m), chunks, op, partial);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda::detail
