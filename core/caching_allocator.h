#pragma once
// CachingAllocator: the cache shared by the pinned and device allocators (core/allocator.h), over a
// RawAllocator that does the real allocation (cudaHostAlloc, cudaMalloc, or a fake in tests, which is why
// this header exists: the cache's locking, retry and stream rules are tested on the CPU).
//
// Blocks are reused for exactly the same rounded size and the same stream. A stream's handle value may be
// reused by a new stream once the old one is destroyed, while the old stream's queued work still uses a
// block cached under that value; so the key is (size, stream, generation), and retire_stream() starts a new
// generation for the handle. Blocks of a retired generation are never handed out again: release_cached()
// (also run before an out-of-memory error) returns them to the driver, whose free waits for the device.
//
// Graph pools: a captured CUDA graph keeps the addresses it was captured with, and every replay writes
// them. So while a stream captures into a pool, its allocations come from that pool (a block the capture
// freed is reused inside the capture, as replays run in capture order), and every block of that stream freed
// meanwhile joins the pool, wherever it came from (the graph's kernels use it). A pool's blocks are handed
// out only to allocations of the same pool, and release_cached() leaves them where they are; they return to
// the shared cache when the pool is released (the graph destroyed), a block still in use when it is freed.
// A miss during a capture that the driver cannot serve is an out-of-memory error at once, without the usual
// release of the cache and retry: cudaFree is illegal while a stream captures (it would invalidate the
// capture), and the caller (--cuda-graph auto) falls back to eager steps with the error's message.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/allocator.h"

namespace engine {

// The memory behind a cache.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  // nullptr when out of memory; throws engine::Error on any other failure.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void free(void* ptr) = 0;
  virtual const char* name() const = 0;
  // Throws the out-of-memory error for a request of `bytes`. Called with no lock of the cache held, so it
  // may query anything, the cache included; `stats` is the cache's state when the retry failed. `context`
  // ("" or a sentence) says what the cache could not do, and belongs in the message.
  [[noreturn]] virtual void out_of_memory(std::size_t bytes, const AllocatorStats& stats,
                                          const std::string& context) = 0;
};

class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(std::unique_ptr<RawAllocator> raw);
  // Returns the cached blocks to the raw allocator; blocks still handed out stay their owners' (the device
  // caches live until the process ends, core/allocator.cpp, so this runs for the ones tests make).
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(std::size_t bytes, void* stream) override;
  void deallocate(void* ptr) override;
  AllocatorStats stats() const override;
  void reset_peak() override;
  void release_cached() override;
  void retire_stream(void* stream) override;

  // Graph pools (above). A new pool's id (never 0).
  std::uint64_t create_graph_pool();
  // From now until end_graph_capture(stream), allocations on `stream` come from `pool`, and every block of
  // `stream` freed meanwhile joins it. Throws for a pool that does not exist or a stream already capturing.
  void begin_graph_capture(void* stream, std::uint64_t pool);
  void end_graph_capture(void* stream);
  // The graph is destroyed: the pool's blocks go back to the shared cache (those in use when freed).
  void release_graph_pool(std::uint64_t pool);
  // Bytes held by `pool` (in use and cached), for tests and logs.
  std::size_t graph_pool_bytes(std::uint64_t pool) const;

 private:
  struct Block {
    std::size_t size;
    void* stream;
    std::uint64_t generation;
    std::uint64_t pool;  // 0: the shared cache
  };
  // size, stream, the stream's generation, the graph pool (0: shared)
  using Key = std::tuple<std::size_t, void*, std::uint64_t, std::uint64_t>;

  std::uint64_t capturing_pool_locked(void* stream) const;  // 0 when the stream is not capturing

  void* take_cached_locked(const Key& key);
  void release_cached_locked();

  std::unique_ptr<RawAllocator> raw_;
  mutable std::mutex mutex_;
  std::map<Key, std::vector<void*>> free_;
  std::unordered_map<void*, Block> live_;
  std::unordered_map<void*, std::uint64_t> generation_;   // only streams retired at least once
  std::unordered_map<void*, std::uint64_t> capturing_;    // stream -> the pool it captures into
  std::unordered_map<std::uint64_t, std::size_t> pools_;  // live pool -> its bytes (in use and cached)
  std::uint64_t next_pool_ = 1;
  AllocatorStats stats_;
};

// The cache behind device_allocator(device) (core/allocator.h), for its graph pools. Throws engine::Error for
// a device that does not exist (and always in a CPU-only build).
CachingAllocator& device_caching_allocator(int device);

}  // namespace engine
