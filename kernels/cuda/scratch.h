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
Tensor scratch(std::int64_t count, int device, void* stream) {
  return Tensor::empty({std::max<std::int64_t>(count, 1)}, dtype_of<T>::value, Device::cuda(device), stream);
}

// The same on the calling thread's current device, for launchers that are given only raw pointers (one
// cudaGetDevice, a thread-local read in the runtime). Callers that know the device pass it.
template <typename T>
Tensor scratch(std::int64_t count, void* stream) {
  return scratch<T>(count, current_device(), stream);
}

}  // namespace engine::cuda::detail
