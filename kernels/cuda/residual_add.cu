// Residual add kernels: the sum is formed in double and rounded once (as kernels/cpu/residual_add.cpp),
// with __dadd_rn so the compiler cannot change the operation: bitwise equal to the CPU.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/residual_add.h"

namespace engine::cuda {
namespace {

__global__ void residual_add_forward_kernel(const float* a, const float* b, float* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    y[i] = static_cast<float>(__dadd_rn(static_cast<double>(a[i]), static_cast<double>(b[i])));
  }
}

// Writes dy to da and db; an output that is dy itself is skipped (nullptr here).
__global__ void residual_add_backward_kernel(const float* dy, float* da, float* db, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = dy[i];
    if (da != nullptr) da[i] = g;
    if (db != nullptr) db[i] = g;
  }
}

}  // namespace

void residual_add_forward(cudaStream_t stream, const float* a, const float* b, float* y, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "residual_add_forward: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(a != nullptr && b != nullptr && y != nullptr, "residual_add_forward: null pointer");
  residual_add_forward_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(a, b, y, n);
  ENGINE_LAUNCH_CHECK();
}

void residual_add_backward(cudaStream_t stream, const float* dy, float* da, float* db, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "residual_add_backward: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(dy != nullptr && da != nullptr && db != nullptr, "residual_add_backward: null pointer");
  ENGINE_CHECK(da != db, "residual_add_backward: da and db must be different buffers");
  float* da_write = da == dy ? nullptr : da;
  float* db_write = db == dy ? nullptr : db;
  if (da_write == nullptr && db_write == nullptr) return;
  residual_add_backward_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(dy, da_write, db_write, n);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
