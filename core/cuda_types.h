#pragma once
// cudaStream_t and cudaEvent_t in every build: CUDA's own types in CUDA builds, opaque pointer types of the
// same names in CPU-only builds. Declarations that take them (core/stream.h, kernels/cuda/*.h) then compile
// everywhere, and the code that holds streams and events needs no `#if ENGINE_HAVE_CUDA`.

#if ENGINE_HAVE_CUDA
#include <cuda_runtime_api.h>
#else
struct CUstream_st;
using cudaStream_t = CUstream_st*;
struct CUevent_st;
using cudaEvent_t = CUevent_st*;
#endif
