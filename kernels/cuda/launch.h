#pragma once
// Launch geometry for the elementwise and per-output kernels of kernels/cuda: the block size, the grid for n
// work items (grid_for), and the grid-stride range every such kernel loops over:
//   for (const std::int64_t i : grid_stride(n)) y[i] = f(x[i]);
// (warp_grid_stride(n) hands out one index per warp, for kernels where a warp shares a row or a plane)
// visits each i in [0, n) exactly once across the grid, with 64-bit indices, whatever the grid size (grid_for
// caps it at kMaxBlocks; the loop covers the rest). The range is __host__ __device__ and the device form
// only reads threadIdx/blockIdx, so tests/cpu checks the iteration set on the host for odd sizes and grids.

#include <algorithm>
#include <cstdint>

#include "core/host_device.h"

namespace engine::cuda::detail {

inline constexpr int kBlock = 256;
inline constexpr int kWarp = 32;
// Grid-stride loops cover any n; more blocks than this add nothing but launch overhead.
inline constexpr std::int64_t kMaxBlocks = 65536;

// Blocks of `block` threads for n work items (one per thread), at least 1 and at most kMaxBlocks.
inline unsigned grid_for(std::int64_t n, int block = kBlock) {
  const std::int64_t blocks = (n + block - 1) / block;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, kMaxBlocks));
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The indices first, first + step, first + 2*step, ... below end. Iterating compares with <, so a first
// at or past end yields nothing.
class StrideRange {
 public:
  class Iterator {
   public:
    ENGINE_HOST_DEVICE Iterator(std::int64_t i, std::int64_t step) : i_(i), step_(step) {}
    ENGINE_HOST_DEVICE std::int64_t operator*() const { return i_; }
    ENGINE_HOST_DEVICE Iterator& operator++() {
      i_ += step_;
      return *this;
    }
    // Only ever compared with end(): "not done" is i < end.
    ENGINE_HOST_DEVICE bool operator!=(const Iterator& end) const { return i_ < end.i_; }

   private:
    std::int64_t i_, step_;
  };

  ENGINE_HOST_DEVICE StrideRange(std::int64_t first, std::int64_t step, std::int64_t end)
      : first_(first), step_(step), end_(end) {}
  ENGINE_HOST_DEVICE Iterator begin() const { return {first_, step_}; }
  ENGINE_HOST_DEVICE Iterator end() const { return {end_, step_}; }

 private:
  std::int64_t first_, step_, end_;
};

// What thread `thread` of block `block` visits of [begin, end) in a grid of `blocks` blocks of
// `block_size` threads. The device form below supplies those from the built-ins.
ENGINE_HOST_DEVICE StrideRange grid_stride_for(std::int64_t begin, std::int64_t end, std::int64_t block,
                                               std::int64_t thread, std::int64_t blocks,
                                               std::int64_t block_size) {
  return {begin + block * block_size + thread, blocks * block_size, end};
}

// The elementwise kernels load and store 4 floats (128 bits) at a time where every pointer is 16-byte
// aligned: the allocator's blocks are (cudaMalloc: 256 bytes) and the flat parameter and gradient buffers put
// each parameter at a multiple of layers/model.h's kParameterAlignment (32 elements), so the training path
// takes the vector form; a view at any other offset takes the scalar form. nullptr counts as aligned (an
// output the launcher skips).
inline constexpr std::uintptr_t kVectorBytes = 16;
template <typename... Ptr>
bool vector_aligned(const Ptr*... ptrs) {
  return ((reinterpret_cast<std::uintptr_t>(ptrs) % kVectorBytes == 0) && ...);
}

#if defined(__CUDACC__)
// This thread's share of [begin, end) (of [0, n) for the one-argument form), one index per thread per step.
__device__ __forceinline__ StrideRange grid_stride(std::int64_t begin, std::int64_t end) {
  return grid_stride_for(begin, end, blockIdx.x, threadIdx.x, gridDim.x, blockDim.x);
}
__device__ __forceinline__ StrideRange grid_stride(std::int64_t n) { return grid_stride(0, n); }
// This warp's share of [0, n), one index per warp per step (each lane of the warp gets the same indices).
__device__ __forceinline__ StrideRange warp_grid_stride(std::int64_t n) {
  return grid_stride_for(0, n, blockIdx.x, threadIdx.x / kWarp, gridDim.x, blockDim.x / kWarp);
}
#endif

}  // namespace engine::cuda::detail
