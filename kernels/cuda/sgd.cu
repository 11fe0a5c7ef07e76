// The fused SGD step: one launch over the whole flat parameter buffer. The arithmetic mirrors
// kernels/cpu/sgd.cpp operation for operation in double, each step written with an explicit round-to-nearest
// intrinsic (__dmul_rn, __dadd_rn, __dsub_rn) so nvcc cannot fuse a multiply and an add into an FMA (it
// would by default, and the CPU build does not): the result is bitwise equal to cpu::sgd_step<float>. 128-bit
// accesses where the pointers allow (kernels/cuda/vector4.cuh). With a bf16 mirror (bf16 autocast) the same
// thread stores each new parameter's bf16 rounding there.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/sgd.h"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda {
namespace {

struct SgdParams {
  double lr, momentum, one_minus_dampening, weight_decay;
  bool use_momentum, nesterov, first_step;
  const double* device_lr;  // when set, the rate is read here (a graph's step state), not from `lr`
};

// The step's rate: one load per thread from device memory when the launch was given a pointer.
__device__ __forceinline__ double step_lr(const SgdParams& o) {
  return o.device_lr != nullptr ? *o.device_lr : o.lr;
}

// One element's step at rate `lr` and decay `weight_decay`; `buffer` is read and written only with momentum.
__device__ __forceinline__ void sgd_element(const SgdParams& o, double lr, double weight_decay, float& param,
                                            float grad, float& buffer) {
  const double p = static_cast<double>(param);
  double g = __dadd_rn(static_cast<double>(grad), __dmul_rn(weight_decay, p));
  if (o.use_momentum) {
    const double buf = o.first_step ? g
                                    : __dadd_rn(__dmul_rn(o.momentum, static_cast<double>(buffer)),
                                                __dmul_rn(o.one_minus_dampening, g));
    buffer = static_cast<float>(buf);
    g = o.nesterov ? __dadd_rn(g, __dmul_rn(o.momentum, buf)) : buf;
  }
  param = static_cast<float>(__dsub_rn(p, __dmul_rn(lr, g)));
}

// Every element at o.lr and o.weight_decay (no parameter groups).
template <bool kVector>
__global__ void sgd_kernel(SgdParams o, float* __restrict__ params, const float* __restrict__ grads,
                           float* __restrict__ buffer, bfloat16* __restrict__ mirror, std::int64_t n) {
  const double lr = step_lr(o);
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / 4 * 4;
    for (const std::int64_t g : detail::grid_stride(n / 4)) {
      detail::Float4 p = detail::load4(params, g);
      const detail::Float4 gr = detail::load4(grads, g);
      detail::Float4 b{};
      if (o.use_momentum && !o.first_step) b = detail::load4(buffer, g);
#pragma unroll
      for (int k = 0; k < 4; ++k) sgd_element(o, lr, o.weight_decay, p.v[k], gr.v[k], b.v[k]);
      detail::store4(params, g, p);
      if (o.use_momentum) detail::store4(buffer, g, b);
      if (mirror != nullptr) {
        detail::Bf16x4 m;
#pragma unroll
        for (int k = 0; k < 4; ++k) m.v[k] = to_bfloat16(p.v[k]);
        detail::store4(mirror, g, m);
      }
    }
  }
  for (const std::int64_t i : detail::grid_stride(scalar_from, n)) {
    float unused = 0.0f;
    sgd_element(o, lr, o.weight_decay, params[i], grads[i], o.use_momentum ? buffer[i] : unused);
    if (mirror != nullptr) mirror[i] = to_bfloat16(params[i]);
  }
}

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

// With parameter groups: each element takes its tile's rate factor and decay; frozen tiles are skipped.
__global__ void sgd_tiles_kernel(SgdParams o, const cpu::SgdGroup* __restrict__ tiles, int count,
                                 float* __restrict__ params, const float* __restrict__ grads,
                                 float* __restrict__ buffer, bfloat16* __restrict__ mirror, std::int64_t n) {
  const double lr = step_lr(o);
  for (const std::int64_t i : detail::grid_stride(n)) {
    const cpu::SgdGroup& t = tile_of(tiles, count, i);
    if (t.frozen) continue;
    float unused = 0.0f;
    sgd_element(o, __dmul_rn(lr, t.lr_scale), t.weight_decay, params[i], grads[i],
                o.use_momentum ? buffer[i] : unused);
    if (mirror != nullptr) mirror[i] = to_bfloat16(params[i]);
  }
}

}  // namespace

namespace {

void launch(cudaStream_t stream, const cpu::SgdOptions& options, const cpu::SgdGroup* tiles, int count,
            float* params, const float* grads, float* momentum_buffer, std::int64_t n, bool first_step,
            bfloat16* mirror, const double* device_lr) {
  options.validate();
  ENGINE_CHECK(n >= 0, "sgd_step: parameter count must be non-negative, got {}", n);
  if (n == 0) return;
  const bool use_momentum = options.momentum != 0.0;
  ENGINE_CHECK(params != nullptr && grads != nullptr, "sgd_step: null params or grads");
  ENGINE_CHECK(!use_momentum || momentum_buffer != nullptr, "sgd_step: momentum={} needs a momentum buffer",
               options.momentum);
  // (1 - dampening) is formed on the host exactly as the CPU forms it inside its loop.
  const SgdParams o{options.lr,           options.momentum, 1.0 - options.dampening,
                    options.weight_decay, use_momentum,     options.nesterov,
                    first_step,           device_lr};
  if (tiles != nullptr) {
    sgd_tiles_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(o, tiles, count, params, grads,
                                                                         momentum_buffer, mirror, n);
  } else if (detail::vector_aligned(params, grads, use_momentum ? momentum_buffer : nullptr, mirror)) {
    sgd_kernel<true><<<detail::grid_for(detail::ceil_div(n, 4)), detail::kBlock, 0, stream>>>(
        o, params, grads, momentum_buffer, mirror, n);
  } else {
    sgd_kernel<false>
        <<<detail::grid_for(n), detail::kBlock, 0, stream>>>(o, params, grads, momentum_buffer, mirror, n);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace

void sgd_step(cudaStream_t stream, const cpu::SgdOptions& options, float* params, const float* grads,
              float* momentum_buffer, std::int64_t n, bool first_step, bfloat16* bf16_mirror,
              const double* device_lr) {
  ENGINE_NVTX_RANGE("sgd_step");
  launch(stream, options, nullptr, 0, params, grads, momentum_buffer, n, first_step, bf16_mirror, device_lr);
}

void sgd_step_tiles(cudaStream_t stream, const cpu::SgdOptions& options, const cpu::SgdGroup* device_tiles,
                    int count, float* params, const float* grads, float* momentum_buffer, std::int64_t n,
                    bool first_step, bfloat16* bf16_mirror, const double* device_lr) {
  ENGINE_NVTX_RANGE("sgd_step_tiles");
  ENGINE_CHECK(device_tiles != nullptr && count > 0, "sgd_step_tiles: {} tiles at {}", count,
               static_cast<const void*>(device_tiles));
  launch(stream, options, device_tiles, count, params, grads, momentum_buffer, n, first_step, bf16_mirror,
         device_lr);
}

}  // namespace engine::cuda
