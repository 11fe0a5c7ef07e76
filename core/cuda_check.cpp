#include "core/cuda_check.h"

#include <fmt/format.h>

#include "core/library_error.h"

namespace engine::detail {

std::string status_message(cudaError_t s) {
  return fmt::format("CUDA error: {} ({})", cudaGetErrorString(s), cudaGetErrorName(s));
}

std::string status_message(cudnnStatus_t s) {
  // cudnnGetLastErrorString adds the detail cuDNN 9 keeps about the most recent failure.
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  return fmt::format("cuDNN error: {}{}{}", cudnnGetErrorString(s), detail[0] ? ": " : "", detail);
}

std::string status_message(cublasStatus_t s) {
  return fmt::format("cuBLAS error: {} ({})", cublasGetStatusString(s), cublasGetStatusName(s));
}

std::string status_message(ncclResult_t s) {
  const char* last = ncclGetLastError(nullptr);
  return fmt::format("NCCL error: {}{}{}", ncclGetErrorString(s), last && last[0] ? ": " : "",
                     last ? last : "");
}

void throw_library_error(const std::string& message, const char* expr, const char* file, int line) {
  throw LibraryError(fmt::format("{} in `{}`", message, expr), file, line);
}

}  // namespace engine::detail
