#pragma once
// Internal: device scratch memory for the launchers (host code only, usable from .cpp and .cu files).

#include <algorithm>
#include <cstdint>

#include "core/tensor.h"
#include "kernels/cuda/handles.h"

namespace engine::cuda::detail {

// Uninitialized device scratch of `count` elements of T, on the calling thread's current device, from the
// caching allocator, tagged with `stream`. Dropping it right after the launches that use it is safe: the
// allocator hands the block out again only on the same stream, where the use is ordered before the reuse.
template <typename T>
Tensor scratch(std::int64_t count, void* stream) {
  return Tensor::empty({std::max<std::int64_t>(count, 1)}, dtype_of<T>::value, Device::cuda(current_device()),
                       stream);
}

}  // namespace engine::cuda::detail
