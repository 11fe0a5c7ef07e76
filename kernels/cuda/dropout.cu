// Dropout kernels: the mask is engine::philox_uniform(seed, offset, i) >= p, the rule of
// kernels/cpu/dropout.cpp evaluated by the same __host__ __device__ function, so masks agree bit for bit.
// Each thread draws one Philox block (4 words) and handles the 4 elements it covers, so the generator runs
// once per 4 elements as on the CPU's average; the values are those of philox_word(seed, offset, i).
#include <type_traits>

#include "core/philox.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/dropout.h"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/vector4.cuh"
#include "kernels/elementwise_math.h"

namespace engine::cuda {
namespace {

// out[i] = keep(i) ? float(double(in[i]) * scale) : 0 for the four elements of Philox block `blk`: the
// formula of kernels/elementwise_math.h's DropoutMask, which kernels/cpu_fast/dropout.cpp applies too.
// mask, when not null, receives keep(i) as 0/1 (then in/out are null). kVector: in and out are 16-byte
// aligned, so a whole block of 4 is one float4 load and store (kernels/cuda/vector4.cuh); the last, partial
// block and the mask go element by element.
// T: float, or __nv_bfloat16 (bf16 autocast; scalar accesses only, kVector false).
// offset_base, when not null, is added to `relative_offset` on the device (a CUDA graph's step state).
template <bool kVector, typename T>
__global__ void dropout_kernel(elementwise::DropoutMask f, std::uint64_t seed, std::uint64_t relative_offset,
                               const std::uint64_t* offset_base, const T* in, T* out, std::uint8_t* mask,
                               std::int64_t n) {
  const std::uint64_t offset = offset_base != nullptr ? *offset_base + relative_offset : relative_offset;
  const std::int64_t blocks = (n + 3) / 4;
  for (const std::int64_t blk : detail::grid_stride(blocks)) {
    const PhiloxBlock bits = philox_block(seed, offset, static_cast<std::uint64_t>(blk));
    if constexpr (kVector && std::is_same_v<T, float>) {
      if (mask == nullptr && blk * 4 + 4 <= n) {
        detail::Float4 v = detail::load4(in, blk);
#pragma unroll
        for (int word = 0; word < 4; ++word) v.v[word] = f(bits.v[word], v.v[word]);
        detail::store4(out, blk, v);
        continue;
      }
    }
#pragma unroll
    for (int word = 0; word < 4; ++word) {
      const std::int64_t i = blk * 4 + word;
      if (i >= n) break;
      if (mask != nullptr) {
        mask[i] = f.keep(bits.v[word]) ? 1 : 0;
      } else {
        out[i] = detail::from_float<T>(f(bits.v[word], detail::to_float(in[i])));
      }
    }
  }
}

void check_args(const char* op, float p, std::int64_t n) {
  ENGINE_CHECK(p >= 0.0f && p <= 1.0f, "{}: drop probability p must be in [0, 1], got {}", op, p);
  ENGINE_CHECK(n >= 0, "{}: element count must be non-negative, got {}", op, n);
}

template <typename T>
void launch(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset,
            const std::uint64_t* offset_base, const T* in, T* out, std::uint8_t* mask, std::int64_t n) {
  // As the CPU: p = 1 keeps nothing (uniform < 1 always) and the scale 1/(1-p) is never used, so any finite
  // value will do; the kernel still runs and writes the zeros.
  const elementwise::DropoutMask f{p, p >= 1.0f ? 0.0 : 1.0 / (1.0 - static_cast<double>(p))};
  const std::int64_t blocks = (n + 3) / 4;
  if (std::is_same_v<T, float> && mask == nullptr && detail::vector_aligned(in, out)) {
    dropout_kernel<true><<<detail::grid_for(blocks), detail::kBlock, 0, stream>>>(
        f, seed, offset, offset_base, in, out, mask, n);
  } else {
    dropout_kernel<false><<<detail::grid_for(blocks), detail::kBlock, 0, stream>>>(
        f, seed, offset, offset_base, in, out, mask, n);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace

void dropout_forward(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset, const float* x,
                     float* y, std::int64_t n, const std::uint64_t* offset_base) {
  ENGINE_NVTX_RANGE("dropout_forward");
  check_args("dropout_forward", p, n);
  if (n == 0) return;
  ENGINE_CHECK(x != nullptr && y != nullptr, "dropout_forward: null pointer");
  launch(stream, p, seed, offset, offset_base, x, y, nullptr, n);
}

void dropout_backward(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset, const float* dy,
                      float* dx, std::int64_t n, const std::uint64_t* offset_base) {
  ENGINE_NVTX_RANGE("dropout_backward");
  check_args("dropout_backward", p, n);
  if (n == 0) return;
  ENGINE_CHECK(dy != nullptr && dx != nullptr, "dropout_backward: null pointer");
  launch(stream, p, seed, offset, offset_base, dy, dx, nullptr, n);
}

void dropout_mask(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset, std::uint8_t* mask,
                  std::int64_t n) {
  ENGINE_NVTX_RANGE("dropout_mask");
  check_args("dropout_mask", p, n);
  if (n == 0) return;
  ENGINE_CHECK(mask != nullptr, "dropout_mask: null pointer");
  launch<float>(stream, p, seed, offset, nullptr, nullptr, nullptr, mask, n);
}

void dropout_forward(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset,
                     const bfloat16* x, bfloat16* y, std::int64_t n, const std::uint64_t* offset_base) {
  ENGINE_NVTX_RANGE("dropout_forward_bf16");
  check_args("dropout_forward", p, n);
  if (n == 0) return;
  ENGINE_CHECK(x != nullptr && y != nullptr, "dropout_forward: null pointer");
  launch(stream, p, seed, offset, offset_base, detail::device_ptr(x), detail::device_ptr(y), nullptr, n);
}

void dropout_backward(cudaStream_t stream, float p, std::uint64_t seed, std::uint64_t offset,
                      const bfloat16* dy, bfloat16* dx, std::int64_t n, const std::uint64_t* offset_base) {
  ENGINE_NVTX_RANGE("dropout_backward_bf16");
  check_args("dropout_backward", p, n);
  if (n == 0) return;
  ENGINE_CHECK(dy != nullptr && dx != nullptr, "dropout_backward: null pointer");
  launch(stream, p, seed, offset, offset_base, detail::device_ptr(dy), detail::device_ptr(dx), nullptr, n);
}

}  // namespace engine::cuda
