// The activation kernels: one launch_map (kernels/cuda/elementwise.cuh) per direction over the functor of
// kernels/elementwise_math.h that the kind names.
#include "kernels/cuda/activation.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/elementwise_math.h"

namespace engine::cuda {

void activation_forward(cudaStream_t stream, const ActivationParams& p, const float* x, float* y,
                        std::int64_t n) {
  ENGINE_NVTX_RANGE("activation_forward");
  elementwise::visit_activation(
      p, [&](auto f) { detail::launch_map("activation_forward", stream, f, x, y, n); });
}

void activation_backward(cudaStream_t stream, const ActivationParams& p, const float* saved, const float* dy,
                         float* dx, std::int64_t n) {
  ENGINE_NVTX_RANGE("activation_backward");
  elementwise::visit_activation(
      p, [&](auto f) { detail::launch_map("activation_backward", stream, f, saved, dy, dx, n); });
}

void activation_forward(cudaStream_t stream, const ActivationParams& p, const bfloat16* x, bfloat16* y,
                        std::int64_t n) {
  ENGINE_NVTX_RANGE("activation_forward_bf16");
  elementwise::visit_activation(p, [&](auto f) {
    detail::launch_map("activation_forward", stream, f, detail::device_ptr(x), detail::device_ptr(y), n);
  });
}

void activation_backward(cudaStream_t stream, const ActivationParams& p, const bfloat16* saved,
                         const bfloat16* dy, bfloat16* dx, std::int64_t n) {
  ENGINE_NVTX_RANGE("activation_backward_bf16");
  elementwise::visit_activation(p, [&](auto f) {
    detail::launch_map("activation_backward", stream, f, detail::device_ptr(saved), detail::device_ptr(dy),
                       detail::device_ptr(dx), n);
  });
}

}  // namespace engine::cuda
