// GELU kernels: kernels/elementwise_math.h's Gelu through launch_map (kernels/cuda/elementwise.cuh), the
// formula kernels/cpu_fast/gelu applies.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/nvtx.h"
#include "kernels/elementwise_math.h"

namespace engine::cuda {
using elementwise::Gelu;

void gelu_forward(cudaStream_t stream, const float* x, float* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("gelu_forward");
  detail::launch_map("gelu_forward", stream, Gelu{}, x, y, n);
}

void gelu_backward(cudaStream_t stream, const float* x, const float* dy, float* dx, std::int64_t n) {
  ENGINE_NVTX_RANGE("gelu_backward");
  detail::launch_map("gelu_backward", stream, Gelu{}, x, dy, dx, n);
}

void gelu_forward(cudaStream_t stream, const bfloat16* x, bfloat16* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("gelu_forward_bf16");
  detail::launch_map("gelu_forward", stream, Gelu{}, detail::device_ptr(x), detail::device_ptr(y), n);
}

void gelu_backward(cudaStream_t stream, const bfloat16* x, const bfloat16* dy, bfloat16* dx, std::int64_t n) {
  ENGINE_NVTX_RANGE("gelu_backward_bf16");
  detail::launch_map("gelu_backward", stream, Gelu{}, detail::device_ptr(x), detail::device_ptr(dy),
                     detail::device_ptr(dx), n);
}

}  // namespace engine::cuda
