#pragma once
// Internal helpers shared by the layer implementations: pick the C++ scalar type of a CPU tensor, and
// refuse, by name, what a device cannot run. Not part of the public layer API.

#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "layers/layer.h"

#if ENGINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/handles.h"
#endif

namespace engine::layers::detail {

// Runs fn.template operator()<T>() with T = float or double for an F32 or F64 tensor on the CPU: the two
// instantiations of the reference kernels. Any other dtype is an engine::Error naming the layer.
template <typename Fn>
void with_cpu_scalar(const Layer& layer, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::F32: fn.template operator()<float>(); return;
    case DType::F64: fn.template operator()<double>(); return;
    default:
      ENGINE_FAIL("{}: the CPU device runs float32 and float64, not {}", layer.describe(), dtype_name(dtype));
  }
}

// Reached only when a CUDA tensor shows up in a build without CUDA, which Tensor itself prevents.
[[noreturn]] inline void fail_without_cuda(const Layer& layer) {
  ENGINE_FAIL("{}: a CUDA tensor, but this build has no CUDA device", layer.describe());
}

inline int to_int(std::int64_t v) { return static_cast<int>(v); }

#if ENGINE_HAVE_CUDA
inline cudaStream_t cuda_stream(const ExecutionContext& context) {
  return static_cast<cudaStream_t>(context.stream);
}

// The context's cuDNN/cuBLAS handles, bound to its stream.
inline cuda::CudaHandles& cuda_handles(const Layer& layer, const ExecutionContext& context) {
  ENGINE_CHECK(context.handles != nullptr, "{}: a CUDA model needs ExecutionContext::handles",
               layer.describe());
  return context.handles->bind(cuda_stream(context));
}
#endif

}  // namespace engine::layers::detail
