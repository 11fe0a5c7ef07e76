#pragma once
// DeviceGuard: makes a CUDA device current for a scope and restores the caller's device afterwards, so a
// function that works on device d leaves the thread's current device as it found it. The one copy used by
// the allocator, streams, cuDNN/cuBLAS handles and the loader. Only in CUDA builds.
//
// Every call is checked: the constructor throws engine::Error when the device cannot be read or set. The
// destructor cannot throw, so it restores without a check; code that must see a failed restore calls
// restore() first (checked), after which the destructor does nothing. The nothrow form is for destructors
// tearing down at exit, when the device may already be gone: it switches if it can and never reports.

#include <new>

#include <cuda_runtime_api.h>

#include "core/cuda_check.h"

namespace engine {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) {
      CUDA_CHECK(cudaSetDevice(device));
      switched_ = true;
    }
  }
  DeviceGuard(int device, std::nothrow_t) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    if (previous_ != device) switched_ = cudaSetDevice(device) == cudaSuccess;
  }
  ~DeviceGuard() {
    if (switched_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  // Restores the caller's device now, checked; the guard then does nothing more.
  void restore() {
    if (!switched_) return;
    switched_ = false;
    CUDA_CHECK(cudaSetDevice(previous_));
  }

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace engine
