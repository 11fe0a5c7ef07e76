// The fused SGD step: one launch over the whole flat parameter buffer. The arithmetic mirrors
// kernels/cpu/sgd.cpp operation for operation in double, each step written with an explicit round-to-nearest
// intrinsic (__dmul_rn, __dadd_rn, __dsub_rn) so nvcc cannot fuse a multiply and an add into an FMA (it
// would by default, and the CPU build does not): the result is bitwise equal to cpu::sgd_step<float>.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/sgd.h"

namespace engine::cuda {
namespace {

struct SgdParams {
  double lr, momentum, one_minus_dampening, weight_decay;
  bool use_momentum, nesterov, first_step;
};

__global__ void sgd_kernel(SgdParams o, float* __restrict__ params, const float* __restrict__ grads,
                           float* __restrict__ buffer, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const double p = static_cast<double>(params[i]);
    double g = __dadd_rn(static_cast<double>(grads[i]), __dmul_rn(o.weight_decay, p));
    if (o.use_momentum) {
      const double buf = o.first_step ? g
                                      : __dadd_rn(__dmul_rn(o.momentum, static_cast<double>(buffer[i])),
                                                  __dmul_rn(o.one_minus_dampening, g));
      buffer[i] = static_cast<float>(buf);
      g = o.nesterov ? __dadd_rn(g, __dmul_rn(o.momentum, buf)) : buf;
    }
    params[i] = static_cast<float>(__dsub_rn(p, __dmul_rn(o.lr, g)));
  }
}

}  // namespace

void sgd_step(cudaStream_t stream, const cpu::SgdOptions& options, float* params, const float* grads,
              float* momentum_buffer, std::int64_t n, bool first_step) {
  options.validate();
  ENGINE_CHECK(n >= 0, "sgd_step: parameter count must be non-negative, got {}", n);
  if (n == 0) return;
  const bool use_momentum = options.momentum != 0.0;
  ENGINE_CHECK(params != nullptr && grads != nullptr, "sgd_step: null params or grads");
  ENGINE_CHECK(!use_momentum || momentum_buffer != nullptr, "sgd_step: momentum={} needs a momentum buffer",
               options.momentum);
  // (1 - dampening) is formed on the host exactly as the CPU forms it inside its loop.
  const SgdParams o{
      options.lr,       options.momentum, 1.0 - options.dampening, options.weight_decay, use_momentum,
      options.nesterov, first_step};
  sgd_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(o, params, grads, momentum_buffer, n);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
