#pragma once
// The layout change of a 4-d tensor on the GPU: the semantics of kernels/cpu/transpose.h exactly (a batch
// of matrix transposes, dst[b][j][i] = src[b][i][j]), through 32x32 tiles in shared memory so that both the
// reads and the writes are coalesced. Bit copies of elements of 2, 4 or 8 bytes. src and dst must not
// overlap.

#include <cstddef>
#include <cstdint>

#include "kernels/cuda_api.h"

namespace engine::cuda {

void batched_transpose(cudaStream_t stream, std::int64_t batch, std::int64_t rows, std::int64_t cols,
                       std::size_t element_bytes, const void* src, void* dst);

}  // namespace engine::cuda
