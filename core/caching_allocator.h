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

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
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
  // may query anything, the cache included; `stats` is the cache's state when the retry failed.
  [[noreturn]] virtual void out_of_memory(std::size_t bytes, const AllocatorStats& stats) = 0;
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

 private:
  struct Block {
    std::size_t size;
    void* stream;
    std::uint64_t generation;
  };
  using Key = std::tuple<std::size_t, void*, std::uint64_t>;  // size, stream, the stream's generation

  void* take_cached_locked(const Key& key);
  void release_cached_locked();

  std::unique_ptr<RawAllocator> raw_;
  mutable std::mutex mutex_;
  std::map<Key, std::vector<void*>> free_;
  std::unordered_map<void*, Block> live_;
  std::unordered_map<void*, std::uint64_t> generation_;  // only streams retired at least once
  AllocatorStats stats_;
};

}  // namespace engine
