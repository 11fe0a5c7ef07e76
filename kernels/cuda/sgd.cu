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

// The tile of element i: the last one whose begin <= i (the tiles cover [0, n) in order).
__device__ const cpu::SgdGroup& tile_of(const cpu::SgdGroup* tiles, int count, std::int64_t i) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (tiles[mid].begin <= i) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return tiles[lo];
}

// tiles == nullptr: every element takes o.lr and o.weight_decay.
__global__ void sgd_kernel(SgdParams o, const cpu::SgdGroup* __restrict__ tiles, int count,
                           float* __restrict__ params, const float* __restrict__ grads,
                           float* __restrict__ buffer, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    double lr = o.lr, weight_decay = o.weight_decay;
    if (tiles != nullptr) {
      const cpu::SgdGroup& t = tile_of(tiles, count, i);
      if (t.frozen) continue;
      lr = __dmul_rn(o.lr, t.lr_scale);
      weight_decay = t.weight_decay;
    }
    const double p = static_cast<double>(params[i]);
    double g = __dadd_rn(static_cast<double>(grads[i]), __dmul_rn(weight_decay, p));
    if (o.use_momentum) {
      const double buf = o.first_step ? g
                                      : __dadd_rn(__dmul_rn(o.momentum, static_cast<double>(buffer[i])),
                                                  __dmul_rn(o.one_minus_dampening, g));
      buffer[i] = static_cast<float>(buf);
      g = o.nesterov ? __dadd_rn(g, __dmul_rn(o.momentum, buf)) : buf;
    }
    params[i] = static_cast<float>(__dsub_rn(p, __dmul_rn(lr, g)));
  }
}

}  // namespace

namespace {

void launch(cudaStream_t stream, const cpu::SgdOptions& options, const cpu::SgdGroup* tiles, int count,
            float* params, const float* grads, float* momentum_buffer, std::int64_t n, bool first_step) {
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
  sgd_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(o, tiles, count, params, grads,
                                                                 momentum_buffer, n);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace

void sgd_step(cudaStream_t stream, const cpu::SgdOptions& options, float* params, const float* grads,
              float* momentum_buffer, std::int64_t n, bool first_step) {
  launch(stream, options, nullptr, 0, params, grads, momentum_buffer, n, first_step);
}

void sgd_step_tiles(cudaStream_t stream, const cpu::SgdOptions& options, const cpu::SgdGroup* device_tiles,
                    int count, float* params, const float* grads, float* momentum_buffer, std::int64_t n,
                    bool first_step) {
  ENGINE_CHECK(device_tiles != nullptr && count > 0, "sgd_step_tiles: {} tiles at {}", count,
               static_cast<const void*>(device_tiles));
  launch(stream, options, device_tiles, count, params, grads, momentum_buffer, n, first_step);
}

}  // namespace engine::cuda
