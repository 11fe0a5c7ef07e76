#include "core/device.h"

#include <fmt/format.h>

#include "core/error.h"

#if ENGINE_HAVE_CUDA
#include "core/cuda_check.h"
#endif

namespace engine {

std::string Device::str() const { return is_cpu() ? std::string("cpu") : fmt::format("cuda:{}", index); }

bool built_with_cuda() { return ENGINE_HAVE_CUDA != 0; }

int device_count() {
#if ENGINE_HAVE_CUDA
  int n = 0;
  // No driver (cudaErrorInsufficientDriver), no device (cudaErrorNoDevice) and the like all mean
  // "no GPU here"; the sticky error is cleared so later calls start clean.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

void set_device(int index) {
  const int n = device_count();
  ENGINE_CHECK(index >= 0 && index < n, "CUDA device {} does not exist: {} device(s) visible", index, n);
#if ENGINE_HAVE_CUDA
  CUDA_CHECK(cudaSetDevice(index));
#endif
}

}  // namespace engine
