#pragma once
// Loads and stores of the fast CPU loops for both storage types they take: float32, and bfloat16 (bf16
// activation storage, kernels/ops/bf16_storage.h). A loop computes in float (or double) whatever it reads,
// widening a bf16 value exactly, and rounds each output once to its storage (core/dtype.h's to_bfloat16,
// nearest even, the rounding kernels/ops/cast.h and the CUDA bf16 kernels use). So a loop instantiated for
// bfloat16 gives the bits its float32 instantiation would give on the widened inputs, rounded: the op's
// formula stays written once.

#include <type_traits>

#include "core/dtype.h"

namespace engine::cpu_fast {

inline float loaded(float v) { return v; }
inline float loaded(bfloat16 v) { return from_bfloat16(v); }

template <typename T>
inline T stored(float v) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return to_bfloat16(v);
  } else {
    return v;
  }
}

}  // namespace engine::cpu_fast
