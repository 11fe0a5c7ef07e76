#pragma once
// Checks for every CUDA-library call. All four macros come from one generator: the status type picks
// the library's name and message through overloads, and a failure throws engine::Error carrying the file,
// the line, the failing expression and the library's own message, e.g.
//   core/allocator.cpp:88: CUDA error: out of memory (cudaErrorMemoryAllocation) in `cudaMalloc(&p, bytes)`
// ENGINE_LAUNCH_CHECK() follows every kernel launch: it reports a bad launch configuration at the launch.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include "core/error.h"

namespace engine::detail {

inline bool status_ok(cudaError_t s) { return s == cudaSuccess; }
inline bool status_ok(cudnnStatus_t s) { return s == CUDNN_STATUS_SUCCESS; }
inline bool status_ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }
inline bool status_ok(ncclResult_t s) { return s == ncclSuccess; }

std::string status_message(cudaError_t s);
std::string status_message(cudnnStatus_t s);
std::string status_message(cublasStatus_t s);
std::string status_message(ncclResult_t s);

[[noreturn]] void throw_library_error(const std::string& message, const char* expr, const char* file,
                                      int line);

template <typename Status>
inline void check_status(Status s, const char* expr, const char* file, int line) {
  if (!status_ok(s)) [[unlikely]] {
    throw_library_error(status_message(s), expr, file, line);
  }
}

}  // namespace engine::detail

#define ENGINE_STATUS_CHECK(expr) ::engine::detail::check_status((expr), #expr, __FILE__, __LINE__)
#define CUDA_CHECK(expr) ENGINE_STATUS_CHECK(expr)
#define CUDNN_CHECK(expr) ENGINE_STATUS_CHECK(expr)
#define CUBLAS_CHECK(expr) ENGINE_STATUS_CHECK(expr)
#define NCCL_CHECK(expr) ENGINE_STATUS_CHECK(expr)
#define ENGINE_LAUNCH_CHECK() ENGINE_STATUS_CHECK(cudaGetLastError())
