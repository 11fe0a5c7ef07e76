#pragma once
// Scale by a constant on the GPU: y = float(a * double(x)), the reference's rule (kernels/cpu/scale.h), so
// bitwise equal to it. y may alias x.

#include <cstdint>

#include "kernels/cuda_api.h"

namespace engine::cuda {

void scale(cudaStream_t stream, const float* x, double a, float* y, std::int64_t n);

}  // namespace engine::cuda
