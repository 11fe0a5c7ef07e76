// Residual add kernels: the forward is kernels/elementwise_math.h's Sum (the float sum, which is the double
// sum rounded once of kernels/cpu/residual_add.cpp): bitwise equal to the CPU. 128-bit accesses
// where the pointers allow (kernels/cuda/vector4.cuh; the forward through elementwise.cuh).
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/residual_add.h"
#include "kernels/cuda/vector4.cuh"
#include "kernels/elementwise_math.h"

namespace engine::cuda {
namespace {

// Writes dy to da and db; an output that is dy itself is skipped (nullptr here).
template <bool kVector>
__global__ void residual_add_backward_kernel(const float* dy, float* da, float* db, std::int64_t n) {
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / 4 * 4;
    for (const std::int64_t g : detail::grid_stride(n / 4)) {
      const detail::Float4 v = detail::load4(dy, g);
      if (da != nullptr) detail::store4(da, g, v);
      if (db != nullptr) detail::store4(db, g, v);
    }
  }
  for (const std::int64_t i : detail::grid_stride(scalar_from, n)) {
    const float g = dy[i];
    if (da != nullptr) da[i] = g;
    if (db != nullptr) db[i] = g;
  }
}

}  // namespace

void residual_add_forward(cudaStream_t stream, const float* a, const float* b, float* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("residual_add_forward");
  detail::launch_map("residual_add_forward", stream, elementwise::Sum{}, a, b, y, n);
}

void residual_add_forward(cudaStream_t stream, const bfloat16* a, const bfloat16* b, bfloat16* y,
                          std::int64_t n) {
  ENGINE_NVTX_RANGE("residual_add_forward_bf16");
  detail::launch_map("residual_add_forward", stream, elementwise::Sum{}, detail::device_ptr(a),
                     detail::device_ptr(b), detail::device_ptr(y), n);
}

void residual_add_backward(cudaStream_t stream, const float* dy, float* da, float* db, std::int64_t n) {
  ENGINE_NVTX_RANGE("residual_add_backward");
  ENGINE_CHECK(n >= 0, "residual_add_backward: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(dy != nullptr && da != nullptr && db != nullptr, "residual_add_backward: null pointer");
  ENGINE_CHECK(da != db, "residual_add_backward: da and db must be different buffers");
  float* da_write = da == dy ? nullptr : da;
  float* db_write = db == dy ? nullptr : db;
  if (da_write == nullptr && db_write == nullptr) return;
  if (detail::vector_aligned(dy, da_write, db_write)) {
    residual_add_backward_kernel<true>
        <<<detail::grid_for(detail::ceil_div(n, 4)), detail::kBlock, 0, stream>>>(dy, da_write, db_write, n);
  } else {
    residual_add_backward_kernel<false>
        <<<detail::grid_for(n), detail::kBlock, 0, stream>>>(dy, da_write, db_write, n);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
