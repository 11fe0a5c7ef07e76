#include "core/caching_allocator.h"

#include <utility>

#include "core/error.h"

namespace engine {

CachingAllocator::CachingAllocator(std::unique_ptr<RawAllocator> raw) : raw_(std::move(raw)) {
  ENGINE_CHECK(raw_ != nullptr, "CachingAllocator needs a raw allocator");
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void* CachingAllocator::take_cached_locked(const Key& key) {
  auto it = free_.find(key);
  if (it == free_.end() || it->second.empty()) return nullptr;
  void* ptr = it->second.back();
  it->second.pop_back();
  stats_.bytes_cached -= std::get<0>(key);
  return ptr;
}

void* CachingAllocator::allocate(std::size_t bytes, void* stream) {
  const std::size_t size = round_allocation_size(bytes);
  std::unique_lock lock(mutex_);
  const auto gen = generation_.find(stream);
  const std::uint64_t generation = gen == generation_.end() ? 0 : gen->second;
  void* ptr = take_cached_locked({size, stream, generation});
  if (ptr == nullptr) {
    ptr = raw_->allocate(size);
    if (ptr == nullptr && stats_.bytes_cached > 0) {
      // Cached blocks of other sizes (or of retired streams) may be what stands in the way.
      release_cached_locked();
      ptr = raw_->allocate(size);
    }
    if (ptr == nullptr) {
      // Unlock first: the message may ask this cache for its stats (the device allocator's does), and
      // std::mutex is not recursive.
      const AllocatorStats snapshot = stats_;
      lock.unlock();
      raw_->out_of_memory(bytes, snapshot);
    }
    ++stats_.driver_allocs;
  }
  live_[ptr] = {size, stream, generation};
  stats_.bytes_in_use += size;
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = live_.find(ptr);
  ENGINE_CHECK(it != live_.end(), "{}: freeing a pointer this allocator did not hand out", raw_->name());
  const Block block = it->second;
  live_.erase(it);
  stats_.bytes_in_use -= block.size;
  stats_.bytes_cached += block.size;
  free_[{block.size, block.stream, block.generation}].push_back(ptr);
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

void CachingAllocator::release_cached_locked() {
  for (auto& [key, ptrs] : free_) {
    for (void* p : ptrs) {
      raw_->free(p);
      ++stats_.driver_frees;
    }
  }
  free_.clear();
  stats_.bytes_cached = 0;
}

}  // namespace engine
