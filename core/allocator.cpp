#include "core/allocator.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/caching_allocator.h"
#include "core/device.h"
#include "core/error.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if ENGINE_HAVE_CUDA
#include "core/cuda_check.h"
#include "core/device_guard.h"
#endif

namespace engine {

std::size_t round_allocation_size(std::size_t bytes) {
  constexpr std::size_t kSmall = 512, kLarge = 2u << 20, kSmallLimit = 1u << 20;
  if (bytes == 0) bytes = 1;
  const std::size_t unit = bytes < kSmallLimit ? kSmall : kLarge;
  return (bytes + unit - 1) / unit * unit;
}

namespace {

class HostAllocator final : public Allocator {
 public:
  // glibc gives a freed block at the heap's top back to the kernel (trim) and serves blocks above its
  // adaptive threshold from fresh mmaps, so a training step's activations (MBs each, freed and allocated
  // again every step) were faulted in and zeroed by the kernel each step: ~16,000 page faults and ~7% of a
  // bf16 resnet18 step's CPU time (benchmarks/RESULTS.md, 2026-11-29 07:00). Fixed thresholds keep what a
  // step freed for the next one (the peak is unchanged); blocks over 32 MiB (mallopt's limit) still map.
  HostAllocator() {
#if defined(__GLIBC__)
    constexpr int kMmapThreshold = 32 << 20, kTrimThreshold = 1 << 30;
    // A hint, not a requirement: a sanitizer's or another allocator's mallopt returns 0 and changes nothing.
    static_cast<void>(mallopt(M_MMAP_THRESHOLD, kMmapThreshold));
    static_cast<void>(mallopt(M_TRIM_THRESHOLD, kTrimThreshold));
#endif
  }
  void* allocate(std::size_t bytes, void*) override {
    const std::size_t size = (bytes + 63) / 64 * 64;
    void* ptr = std::aligned_alloc(64, size == 0 ? 64 : size);
    ENGINE_CHECK(ptr != nullptr, "host out of memory: asked for {} bytes", bytes);
    std::lock_guard lock(mutex_);
    sizes_[ptr] = size;
    ++stats_.driver_allocs;
    stats_.bytes_in_use += size;
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
    return ptr;
  }
  void deallocate(void* ptr) override {
    if (ptr == nullptr) return;
    {
      std::lock_guard lock(mutex_);
      auto it = sizes_.find(ptr);
      ENGINE_CHECK(it != sizes_.end(), "cpu allocator: freeing a pointer it did not hand out");
      stats_.bytes_in_use -= it->second;
      ++stats_.driver_frees;
      sizes_.erase(it);
    }
    std::free(ptr);
  }
  AllocatorStats stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  void reset_peak() override {
    std::lock_guard lock(mutex_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }
  void release_cached() override {}

 private:
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> sizes_;
  AllocatorStats stats_;
};

#if ENGINE_HAVE_CUDA
class PinnedMemory final : public RawAllocator {
 public:
  void* allocate(std::size_t bytes) override {
    void* ptr = nullptr;
    const cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    CUDA_CHECK(status);
    return ptr;
  }
  void free(void* ptr) override { CUDA_CHECK(cudaFreeHost(ptr)); }
  const char* name() const override { return "pinned allocator"; }
  [[noreturn]] void out_of_memory(std::size_t bytes, const AllocatorStats&,
                                  const std::string& context) override {
    ENGINE_FAIL("pinned host memory exhausted: asked for {} bytes{}{}", bytes, context.empty() ? "" : " ",
                context);
  }
};

class DeviceMemory final : public RawAllocator {
 public:
  explicit DeviceMemory(int device) : device_(device) {}

  void* allocate(std::size_t bytes) override {
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    // A miss while a graph is captured (a graph's pool starts empty): a capture refuses cudaMalloc, a
    // "potentially unsafe" call, unless the thread's mode is relaxed. It is safe here, as PyTorch's
    // allocator has it: the block belongs to the graph's pool for the graph's life (caching_allocator.h).
    // The mode is relaxed for this one call and restored.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    const cudaError_t status = cudaMalloc(&ptr, bytes);
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    guard.restore();
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    CUDA_CHECK(status);
    return ptr;
  }
  void free(void* ptr) override { CUDA_CHECK(cudaFree(ptr)); }
  const char* name() const override { return "device allocator"; }
  [[noreturn]] void out_of_memory(std::size_t bytes, const AllocatorStats& stats,
                                  const std::string& context) override {
    std::size_t free_bytes = 0, total_bytes = 0;
    DeviceGuard guard(device_);
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    guard.restore();
    ENGINE_FAIL(
        "cuda:{} out of memory: asked for {:.1f} MiB, {:.1f} MiB free of {:.1f} MiB ({:.1f} MiB in use "
        "by this process's tensors){}{}",
        device_, static_cast<double>(bytes) / 1048576.0, static_cast<double>(free_bytes) / 1048576.0,
        static_cast<double>(total_bytes) / 1048576.0, static_cast<double>(stats.bytes_in_use) / 1048576.0,
        context.empty() ? "" : " ", context);
  }

 private:
  int device_;
};
#endif

}  // namespace

Allocator& cpu_allocator() {
  static HostAllocator allocator;
  return allocator;
}

Allocator& pinned_allocator() {
#if ENGINE_HAVE_CUDA
  // Leaked on purpose: cached blocks must not be freed after the CUDA runtime shut down at exit.
  static auto* allocator = new CachingAllocator(std::make_unique<PinnedMemory>());
  return *allocator;
#else
  ENGINE_FAIL("pinned host memory needs the CUDA device, and this build has none (ENGINE_WITH_CUDA=OFF)");
#endif
}

Allocator& device_allocator(int device) { return device_caching_allocator(device); }

CachingAllocator& device_caching_allocator(int device) {
#if ENGINE_HAVE_CUDA
  // Built once (thread-safe static initialisation): every tensor allocation and free comes here, so no
  // driver query and no lock on this path. The device count is fixed for the process's life.
  static const std::vector<std::unique_ptr<CachingAllocator>>* const allocators = [] {
    auto* all = new std::vector<std::unique_ptr<CachingAllocator>>();  // leaked on purpose, as above
    const int n = device_count();
    for (int d = 0; d < n; ++d)
      all->push_back(std::make_unique<CachingAllocator>(std::make_unique<DeviceMemory>(d)));
    return all;
  }();
  const int n = static_cast<int>(allocators->size());
  ENGINE_CHECK(device >= 0 && device < n, "CUDA device {} does not exist: {} device(s) visible", device, n);
  return *(*allocators)[static_cast<std::size_t>(device)];
#else
  ENGINE_FAIL("CUDA device {} does not exist: 0 device(s) visible", device);
#endif
}

}  // namespace engine
