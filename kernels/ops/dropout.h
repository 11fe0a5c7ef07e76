#pragma once
// Inverted dropout: keep element i iff philox_uniform(seed, offset, i) >= p, the same mask on every path.
// offset_base: CUDA only, a device address whose value the kernel adds to `offset` (a CUDA graph's step
// state, kernels/cuda/dropout.h); the CPU paths refuse it.
//
// Layout: i is the position in MEMORY, not the logical NCHW index. A 4-d NHWC tensor therefore draws a
// different mask than the same values in NCHW would (equally distributed, just paired with other elements);
// computing the logical index would cost the kernels a division per element and buy nothing statistically.
// Where Dropout follows Flatten (2-d tensors, always NCHW: vgg6's and cnn3's classifiers) both layouts draw
// the same masks; a 4-d Dropout in NHWC (the mnist net's dropout1) draws its own.

#include <cstdint>

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void dropout_forward(const ExecutionContext& ctx, double p, std::uint64_t seed, std::uint64_t offset,
                     const Tensor& x, const Tensor& y, const std::uint64_t* offset_base = nullptr);
void dropout_backward(const ExecutionContext& ctx, double p, std::uint64_t seed, std::uint64_t offset,
                      const Tensor& dy, const Tensor& dx, const std::uint64_t* offset_base = nullptr);

}  // namespace engine::ops
