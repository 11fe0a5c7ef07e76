#pragma once
// Memory for tensors. Three allocators, all behind one small interface:
//  - cpu_allocator(): aligned host memory (64 bytes, a cache line).
//  - pinned_allocator(): page-locked host memory (cudaHostAlloc) for asynchronous copies; cached.
//  - device_allocator(d): CUDA memory on device d, cached.
//
// Why cache: shapes are fixed during a run, so after the first step every request repeats one already
// seen. The caching allocators keep freed blocks and hand them back for the same rounded size, so a
// steady-state training step makes no cudaMalloc/cudaFree (stats().driver_allocs stops growing), which
// also keeps the step capturable in a CUDA graph.
//
// Stream rule (as PyTorch's): a device block is tagged with the stream it was allocated on and reused
// only for requests on that stream, so work queued on the stream orders the old use before the new one.
// A block used on another stream must be kept alive by its owner until that stream is done with it.
// Stream handles can be reused after cudaStreamDestroy: engine::Stream retires its handle here first
// (retire_stream), so a new stream with the same handle value starts with an empty cache.

#include <cstddef>
#include <cstdint>

namespace engine {

struct AllocatorStats {
  std::size_t driver_allocs = 0;  // calls to the underlying cudaMalloc / cudaHostAlloc / aligned_alloc
  std::size_t driver_frees = 0;   // calls to the underlying free
  std::size_t bytes_in_use = 0;   // handed out and not yet returned
  std::size_t peak_bytes_in_use = 0;
  std::size_t bytes_cached = 0;  // held in the cache, free for reuse
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // `stream` is a cudaStream_t for device memory (nullptr = the legacy default stream); ignored on the host.
  virtual void* allocate(std::size_t bytes, void* stream = nullptr) = 0;
  virtual void deallocate(void* ptr) = 0;
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak() = 0;
  // Returns every cached block to the driver (cudaFree); blocks in use are untouched.
  virtual void release_cached() = 0;
  // `stream` is about to be destroyed, and a new stream may get the same handle value while the old one's
  // queued work still uses blocks cached for it: those blocks are never handed out again on that handle
  // (core/caching_allocator.h). A no-op where blocks are not tagged with streams.
  virtual void retire_stream(void* /*stream*/) {}
};

Allocator& cpu_allocator();
Allocator& pinned_allocator();            // throws engine::Error where CUDA is absent
Allocator& device_allocator(int device);  // throws engine::Error for a device that does not exist

// Sizes are rounded so that nearby requests share blocks: to 512 bytes below 1 MiB, else to 2 MiB.
std::size_t round_allocation_size(std::size_t bytes);

}  // namespace engine
