#include "core/allocator.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/device.h"
#include "core/error.h"

#if ENGINE_HAVE_CUDA
#include "core/cuda_check.h"
#endif

namespace engine {

std::size_t round_allocation_size(std::size_t bytes) {
  constexpr std::size_t kSmall = 512, kLarge = 2u << 20, kSmallLimit = 1u << 20;
  if (bytes == 0) bytes = 1;
  const std::size_t unit = bytes < kSmallLimit ? kSmall : kLarge;
  return (bytes + unit - 1) / unit * unit;
}

namespace {

// Cache bookkeeping shared by the pinned and device allocators. The backend supplies the raw
// allocate/free; blocks are reused for exactly the same rounded size and the same stream.
class CachingAllocator : public Allocator {
 public:
  void* allocate(std::size_t bytes, void* stream) override {
    const std::size_t size = round_allocation_size(bytes);
    std::lock_guard lock(mutex_);
    void* ptr = nullptr;
    auto it = free_.find({size, stream});
    if (it != free_.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      stats_.bytes_cached -= size;
    } else {
      ptr = raw_allocate_with_retry(size, bytes);
      ++stats_.driver_allocs;
    }
    live_[ptr] = {size, stream};
    stats_.bytes_in_use += size;
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
    return ptr;
  }

  void deallocate(void* ptr) override {
    if (ptr == nullptr) return;
    std::lock_guard lock(mutex_);
    auto it = live_.find(ptr);
    ENGINE_CHECK(it != live_.end(), "{}: freeing a pointer this allocator did not hand out", name());
    const Block block = it->second;
    live_.erase(it);
    stats_.bytes_in_use -= block.size;
    stats_.bytes_cached += block.size;
    free_[{block.size, block.stream}].push_back(ptr);
  }

  AllocatorStats stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  void reset_peak() override {
    std::lock_guard lock(mutex_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }

  void release_cached() override {
    std::lock_guard lock(mutex_);
    release_cached_locked();
  }

 protected:
  virtual void* raw_allocate(std::size_t bytes) = 0;  // nullptr when out of memory; throws on other errors
  virtual void raw_free(void* ptr) = 0;
  virtual const char* name() const = 0;
  [[noreturn]] virtual void out_of_memory(std::size_t bytes) = 0;

 private:
  struct Block {
    std::size_t size;
    void* stream;
  };

  void* raw_allocate_with_retry(std::size_t size, std::size_t requested) {
    void* ptr = raw_allocate(size);
    if (ptr == nullptr && stats_.bytes_cached > 0) {
      release_cached_locked();  // cached blocks of other sizes may be what stands in the way
      ptr = raw_allocate(size);
    }
    if (ptr == nullptr) out_of_memory(requested);
    return ptr;
  }

  void release_cached_locked() {
    for (auto& [key, ptrs] : free_) {
      for (void* p : ptrs) {
        raw_free(p);
        ++stats_.driver_frees;
      }
    }
    free_.clear();
    stats_.bytes_cached = 0;
  }

  mutable std::mutex mutex_;
  std::map<std::pair<std::size_t, void*>, std::vector<void*>> free_;
  std::unordered_map<void*, Block> live_;
  AllocatorStats stats_;
};

class HostAllocator final : public Allocator {
 public:
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
class PinnedAllocator final : public CachingAllocator {
 protected:
  void* raw_allocate(std::size_t bytes) override {
    void* ptr = nullptr;
    const cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    CUDA_CHECK(status);
    return ptr;
  }
  void raw_free(void* ptr) override { CUDA_CHECK(cudaFreeHost(ptr)); }
  const char* name() const override { return "pinned allocator"; }
  [[noreturn]] void out_of_memory(std::size_t bytes) override {
    ENGINE_FAIL("pinned host memory exhausted: asked for {} bytes", bytes);
  }
};

class DeviceAllocator final : public CachingAllocator {
 public:
  explicit DeviceAllocator(int device) : device_(device) {}

 protected:
  void* raw_allocate(std::size_t bytes) override {
    int previous = 0;
    CUDA_CHECK(cudaGetDevice(&previous));
    CUDA_CHECK(cudaSetDevice(device_));
    void* ptr = nullptr;
    const cudaError_t status = cudaMalloc(&ptr, bytes);
    CUDA_CHECK(cudaSetDevice(previous));
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    CUDA_CHECK(status);
    return ptr;
  }
  void raw_free(void* ptr) override { CUDA_CHECK(cudaFree(ptr)); }
  const char* name() const override { return "device allocator"; }
  [[noreturn]] void out_of_memory(std::size_t bytes) override {
    std::size_t free_bytes = 0, total_bytes = 0;
    int previous = 0;
    CUDA_CHECK(cudaGetDevice(&previous));
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    CUDA_CHECK(cudaSetDevice(previous));
    ENGINE_FAIL(
        "cuda:{} out of memory: asked for {:.1f} MiB, {:.1f} MiB free of {:.1f} MiB ({:.1f} MiB in use "
        "by this process's tensors)",
        device_, static_cast<double>(bytes) / 1048576.0, static_cast<double>(free_bytes) / 1048576.0,
        static_cast<double>(total_bytes) / 1048576.0, static_cast<double>(stats().bytes_in_use) / 1048576.0);
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
  static auto* allocator = new PinnedAllocator();
  return *allocator;
#else
  ENGINE_FAIL("pinned host memory needs the CUDA device, and this build has none (ENGINE_WITH_CUDA=OFF)");
#endif
}

Allocator& device_allocator(int device) {
  const int n = device_count();
  ENGINE_CHECK(device >= 0 && device < n, "CUDA device {} does not exist: {} device(s) visible", device, n);
#if ENGINE_HAVE_CUDA
  static std::mutex mutex;
  static std::vector<std::unique_ptr<DeviceAllocator>>* allocators =
      new std::vector<std::unique_ptr<DeviceAllocator>>();  // leaked on purpose, as above
  std::lock_guard lock(mutex);
  if (allocators->empty()) {
    for (int d = 0; d < n; ++d) allocators->push_back(std::make_unique<DeviceAllocator>(d));
  }
  return *(*allocators)[static_cast<std::size_t>(device)];
#else
  ENGINE_FAIL("unreachable: no CUDA devices in a CPU-only build");
#endif
}

}  // namespace engine
