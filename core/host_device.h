#pragma once
// ENGINE_HOST_DEVICE marks a small function that is one definition for the host and for CUDA threads (the
// Philox generator, the augmentation draws, the bfloat16 rounding), so the two sides cannot drift: under nvcc
// it is __host__ __device__ and inlined, elsewhere a plain inline function.

#if defined(__CUDACC__)
#define ENGINE_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define ENGINE_HOST_DEVICE inline
#endif
