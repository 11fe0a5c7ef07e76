#pragma once
// Inverted dropout: keep element i iff philox_uniform(seed, offset, i) >= p, the same mask on every path.

#include <cstdint>

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void dropout_forward(const ExecutionContext& ctx, double p, std::uint64_t seed, std::uint64_t offset,
                     const Tensor& x, const Tensor& y);
void dropout_backward(const ExecutionContext& ctx, double p, std::uint64_t seed, std::uint64_t offset,
                      const Tensor& dy, const Tensor& dx);

}  // namespace engine::ops
