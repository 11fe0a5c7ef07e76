#pragma once
// The layout change of a 4-d tensor [N, C, H, W] (core/layout.h), the reference: N matrix transposes.
// NCHW -> NHWC transposes each image's [C, H*W] matrix into [H*W, C]; NHWC -> NCHW each [H*W, C] into
// [C, H*W]. With rows x cols the source matrix of each of the `batch` images:
//   dst[(b * cols + j) * rows + i] = src[(b * rows + i) * cols + j]
// Each direction is the other's inverse, and so its backward (a permutation's adjoint is its inverse). Pure
// data movement: one template serves every element type (float, double, the int32 max-pool argmax, bf16).
// src and dst must not overlap.

#include <cstdint>

namespace engine::cpu {

template <typename T>
void batched_transpose(std::int64_t batch, std::int64_t rows, std::int64_t cols, const T* src, T* dst) {
  const std::int64_t plane = rows * cols;
  for (std::int64_t b = 0; b < batch; ++b) {
    const T* s = src + b * plane;
    T* d = dst + b * plane;
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) d[j * rows + i] = s[i * cols + j];
    }
  }
}

}  // namespace engine::cpu
