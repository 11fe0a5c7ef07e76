#pragma once
// kernels/cpu/copy_rows.h on the GPU: one thread per copied value (exact copies, bitwise equal to the CPU).

#include <cstdint>

#include "kernels/cpu/copy_rows.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void copy_rows(cudaStream_t stream, const RowCopy& c, const float* src, float* dst);
void channel_shuffle(cudaStream_t stream, std::int64_t outer, std::int64_t channels, std::int64_t inner,
                     std::int64_t groups, const float* src, float* dst);

}  // namespace engine::cuda
