#pragma once
// The one header that lets CPU-only builds compile code that calls kernels/cuda: `kHaveCuda`, and
// `cudaStream_t` as an opaque pointer type when CUDA is off (core/cuda_types.h).
//
// Why this and not stubs: the kernels/cuda headers then compile in every build, so each CUDA function is
// declared once (its own header) and never repeated as a stub. Callers put the calls in
// `if constexpr (kHaveCuda)` branches (kernels/ops/dispatch.h does it for every op); in a CPU-only build the
// branch is a discarded statement, whose calls are not odr-used, so nothing needs a definition at link time.

#include "core/cuda_types.h"

namespace engine {

inline constexpr bool kHaveCuda = ENGINE_HAVE_CUDA != 0;

namespace cuda {
class CudaHandles;  // kernels/cuda/handles.h (CUDA builds): the cuDNN/cuBLAS handles of one device
}  // namespace cuda

}  // namespace engine
