#include "kernels/ops/cast.h"

#include <type_traits>

#include "kernels/cpu/cast.h"
#include "kernels/cuda/cast.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void cast_to_bf16(const ExecutionContext& ctx, const Tensor& src, const Tensor& dst) {
  ENGINE_CHECK(dst.dtype() == DType::BF16 && dst.numel() == src.numel(), "cast_to_bf16: {} into {}",
               src.str(), dst.str());
  dispatch("cast_to_bf16", ctx, src, [&]<Path P, typename T>() {
    if constexpr (!std::is_same_v<T, float>) {
      ENGINE_FAIL("cast_to_bf16: casts float32, not {}", src.str());
    } else if constexpr (P == Path::Cuda) {
      cuda::cast_f32_to_bf16(cuda_stream(ctx), src.data<T>(), dst.data<bfloat16>(), src.numel());
    } else {
      cpu::cast_f32_to_bf16(src.data<T>(), dst.data<bfloat16>(), src.numel());
    }
  });
}

void cast_from_bf16_scaled(const ExecutionContext& ctx, const Tensor& src, const Tensor& dst, float scale) {
  ENGINE_CHECK(src.dtype() == DType::BF16 && dst.numel() == src.numel(), "cast_from_bf16_scaled: {} into {}",
               src.str(), dst.str());
  dispatch("cast_from_bf16_scaled", ctx, dst, [&]<Path P, typename T>() {
    if constexpr (!std::is_same_v<T, float>) {
      ENGINE_FAIL("cast_from_bf16_scaled: casts into float32, not {}", dst.str());
    } else if constexpr (P == Path::Cuda) {
      cuda::cast_bf16_to_f32_scaled(cuda_stream(ctx), src.data<bfloat16>(), dst.data<T>(), dst.numel(),
                                    scale);
    } else {
      cpu::cast_bf16_to_f32_scaled(src.data<bfloat16>(), dst.data<T>(), dst.numel(), scale);
    }
  });
}

void round_to_bf16_values(const ExecutionContext& ctx, const Tensor& src, const Tensor& dst) {
  ENGINE_CHECK(src.dtype() == DType::F32 && dst.dtype() == DType::F32 && dst.numel() == src.numel(),
               "round_to_bf16_values: {} into {}", src.str(), dst.str());
  check_same_layout("round_to_bf16_values", {{"src", src}, {"dst", dst}});
  dispatch("round_to_bf16_values", ctx, src, [&]<Path P, typename T>() {
    if constexpr (!std::is_same_v<T, float>) {
      ENGINE_FAIL("round_to_bf16_values: rounds float32, not {}", src.str());
    } else if constexpr (P == Path::Cuda) {
      cuda::round_to_bf16_values(cuda_stream(ctx), src.data<T>(), dst.data<T>(), src.numel());
    } else {
      cpu::round_to_bf16_values(src.data<T>(), dst.data<T>(), src.numel());
    }
  });
}

}  // namespace engine::ops
