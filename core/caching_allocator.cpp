#include "core/caching_allocator.h"

#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace engine {

CachingAllocator::CachingAllocator(std::unique_ptr<RawAllocator> raw) : raw_(std::move(raw)) {
  ENGINE_CHECK(raw_ != nullptr, "CachingAllocator needs a raw allocator");
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mutex_);
  // The cache dies with the process (or a test): pool blocks go to the driver too.
  for (auto& [key, ptrs] : free_) {
    for (void* p : ptrs) raw_->free(p);
  }
  free_.clear();
}

void* CachingAllocator::take_cached_locked(const Key& key) {
  auto it = free_.find(key);
  if (it == free_.end() || it->second.empty()) return nullptr;
  void* ptr = it->second.back();
  it->second.pop_back();
  stats_.bytes_cached -= std::get<0>(key);
  return ptr;
}

std::uint64_t CachingAllocator::capturing_pool_locked(void* stream) const {
  if (capturing_.empty()) return 0;  // the usual case: one branch more on the allocation path
  const auto it = capturing_.find(stream);
  return it == capturing_.end() ? 0 : it->second;
}

void* CachingAllocator::allocate(std::size_t bytes, void* stream) {
  const std::size_t size = round_allocation_size(bytes);
  std::unique_lock lock(mutex_);
  const auto gen = generation_.find(stream);
  const std::uint64_t generation = gen == generation_.end() ? 0 : gen->second;
  const std::uint64_t pool = capturing_pool_locked(stream);
  void* ptr = take_cached_locked({size, stream, generation, pool});
  if (ptr == nullptr) {
    ptr = raw_->allocate(size);
    // Cached blocks of other sizes (or of retired streams) may be what stands in the way; but no cudaFree
    // while any stream captures (this thread's capture would end; another thread's, as PyTorch has it, too).
    const bool capture_underway = !capturing_.empty();
    if (ptr == nullptr && stats_.bytes_cached > 0 && !capture_underway) {
      release_cached_locked();
      ptr = raw_->allocate(size);
    }
    if (ptr == nullptr) {
      const AllocatorStats snapshot = stats_;
      const std::string context =
          capture_underway ? fmt::format(
                                 "while a CUDA graph is captured (into graph pool {}): the {:.1f} MiB the "
                                 "cache holds are not released during a capture (cudaFree would end it)",
                                 pool != 0 ? pool : capturing_.begin()->second,
                                 static_cast<double>(snapshot.bytes_cached) / 1048576.0)
                           : std::string();
      // Unlock first: the message may ask this cache for its stats (the device allocator's does), and
      // std::mutex is not recursive.
      lock.unlock();
      raw_->out_of_memory(bytes, snapshot, context);
    }
    ++stats_.driver_allocs;
    if (pool != 0) pools_[pool] += size;
  }
  live_[ptr] = {size, stream, generation, pool};
  stats_.bytes_in_use += size;
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = live_.find(ptr);
  ENGINE_CHECK(it != live_.end(), "{}: freeing a pointer this allocator did not hand out", raw_->name());
  Block block = it->second;
  live_.erase(it);
  if (block.pool == 0) {
    // Freed while its stream captures: the graph's kernels use this block, so it joins the graph's pool.
    block.pool = capturing_pool_locked(block.stream);
    if (block.pool != 0) pools_[block.pool] += block.size;
  }
  stats_.bytes_in_use -= block.size;
  stats_.bytes_cached += block.size;
  free_[{block.size, block.stream, block.generation, block.pool}].push_back(ptr);
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void CachingAllocator::release_cached() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::retire_stream(void* stream) {
  if (stream == nullptr) return;  // the legacy default stream is never destroyed
  std::lock_guard lock(mutex_);
  ++generation_[stream];
}

std::uint64_t CachingAllocator::create_graph_pool() {
  std::lock_guard lock(mutex_);
  const std::uint64_t pool = next_pool_++;
  pools_[pool] = 0;
  return pool;
}

void CachingAllocator::begin_graph_capture(void* stream, std::uint64_t pool) {
  std::lock_guard lock(mutex_);
  ENGINE_CHECK(pools_.contains(pool), "{}: graph pool {} does not exist (never created, or released)",
               raw_->name(), pool);
  const auto [it, inserted] = capturing_.emplace(stream, pool);
  ENGINE_CHECK(inserted, "{}: the stream already captures into graph pool {}", raw_->name(), it->second);
}

void CachingAllocator::end_graph_capture(void* stream) {
  std::lock_guard lock(mutex_);
  ENGINE_CHECK(capturing_.erase(stream) == 1, "{}: end of a graph capture that never began on this stream",
               raw_->name());
}

void CachingAllocator::release_graph_pool(std::uint64_t pool) {
  std::lock_guard lock(mutex_);
  ENGINE_CHECK(pools_.contains(pool), "{}: graph pool {} does not exist (never created, or released)",
               raw_->name(), pool);
  for (const auto& [stream, capturing] : capturing_) {
    ENGINE_CHECK(capturing != pool, "{}: graph pool {} released while a stream captures into it",
                 raw_->name(), pool);
  }
  pools_.erase(pool);
  // Its cached blocks join the shared cache under the same stream (the graph's last replay on that stream is
  // ordered before any reuse there); its blocks in use join it when they are freed.
  for (auto it = free_.begin(); it != free_.end();) {
    auto& [size, stream, generation, owner] = it->first;
    if (owner != pool) {
      ++it;
      continue;
    }
    auto& shared = free_[{size, stream, generation, 0}];
    shared.insert(shared.end(), it->second.begin(), it->second.end());
    it = free_.erase(it);
  }
  for (auto& [ptr, block] : live_) {
    if (block.pool == pool) block.pool = 0;
  }
}

std::size_t CachingAllocator::graph_pool_bytes(std::uint64_t pool) const {
  std::lock_guard lock(mutex_);
  const auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second;
}

void CachingAllocator::release_cached_locked() {
  // Blocks of a live graph pool stay: the graph replays into them.
  for (auto it = free_.begin(); it != free_.end();) {
    if (std::get<3>(it->first) != 0) {
      ++it;
      continue;
    }
    for (void* p : it->second) {
      raw_->free(p);
      ++stats_.driver_frees;
      stats_.bytes_cached -= std::get<0>(it->first);
    }
    it = free_.erase(it);
  }
}

}  // namespace engine
