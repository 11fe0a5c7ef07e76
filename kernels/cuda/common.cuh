#pragma once
// Internal helpers shared by the .cu files of kernels/cuda (not part of the public API): launch geometry
// (kernels/cuda/launch.h), size checks, warp/block reductions, and scratch memory from the caching allocator.

#include <algorithm>
#include <cstdint>
#include <limits>

#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "core/error.h"
#include "core/tensor.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/scratch.h"

namespace engine::cuda::detail {

// Kernels index with int where a size is known to fit; the launchers check that it does.
inline void check_fits_int(std::int64_t n, const char* what, const char* op) {
  ENGINE_CHECK(n >= 0 && n <= std::numeric_limits<int>::max(), "{}: {} = {} does not fit in int32", op, what,
               n);
}

// Sums `v` over the warp; every lane gets the total. A fixed butterfly, so the result is deterministic.
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sums `v` over the block (blockDim.x a multiple of 32, at most 1024); thread 0 gets the total. Fixed order.
// `shared` holds at least 32 T. Ends with a __syncthreads, so `shared` may be reused right after.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* shared) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  v = warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = T(0);
  if (warp == 0) {
    total = lane < warps ? shared[lane] : T(0);
    total = warp_sum(total);
  }
  __syncthreads();
  return total;
}

}  // namespace engine::cuda::detail
