// GELU kernels: elementwise (kernels/cuda/elementwise.cuh). The same float formulas as kernels/cpu_fast/gelu.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/nvtx.h"

namespace engine::cuda {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

struct GeluValue {
  __device__ float operator()(float v) const { return 0.5f * v * erfcf(-v * kInvSqrt2); }
};

struct GeluGrad {
  __device__ float operator()(float x, float dy) const {
    return dy * (0.5f * erfcf(-x * kInvSqrt2) + x * kInvSqrt2Pi * expf(-0.5f * x * x));
  }
};

}  // namespace

void gelu_forward(cudaStream_t stream, const float* x, float* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("gelu_forward");
  detail::launch_map("gelu_forward", stream, GeluValue{}, x, y, n);
}

void gelu_backward(cudaStream_t stream, const float* x, const float* dy, float* dx, std::int64_t n) {
  ENGINE_NVTX_RANGE("gelu_backward");
  detail::launch_map("gelu_backward", stream, GeluGrad{}, x, dy, dx, n);
}

void gelu_forward(cudaStream_t stream, const bfloat16* x, bfloat16* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("gelu_forward_bf16");
  detail::launch_map("gelu_forward", stream, GeluValue{}, detail::device_ptr(x), detail::device_ptr(y), n);
}

void gelu_backward(cudaStream_t stream, const bfloat16* x, const bfloat16* dy, bfloat16* dx, std::int64_t n) {
  ENGINE_NVTX_RANGE("gelu_backward_bf16");
  detail::launch_map("gelu_backward", stream, GeluGrad{}, detail::device_ptr(x), detail::device_ptr(dy),
                     detail::device_ptr(dx), n);
}

}  // namespace engine::cuda
