// The caching allocator's logic (core/caching_allocator.h) over a fake raw allocator, so that what only a GPU
// could show (device out of memory, a stream handle reused) is shown on the CPU.
#include "core/caching_allocator.h"

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/timeout.h"

namespace engine {
namespace {

// Host memory with a fixed capacity. Its out-of-memory message asks the cache for its stats, as the device
// allocator's once did while the cache still held its lock (a deadlock on every device OOM); the handler is
// documented to run unlocked, so this must work.
class FakeRawAllocator final : public RawAllocator {
 public:
  explicit FakeRawAllocator(std::size_t capacity) : capacity_(capacity) {}
  void* allocate(std::size_t bytes) override {
    ++calls;
    if (used_ + bytes > capacity_) return nullptr;
    void* p = std::malloc(bytes);
    sizes_[p] = bytes;
    used_ += bytes;
    return p;
  }
  void free(void* p) override {
    used_ -= sizes_.at(p);
    sizes_.erase(p);
    std::free(p);
    ++frees;
    if (on_free) on_free();
  }
  const char* name() const override { return "fake allocator"; }
  [[noreturn]] void out_of_memory(std::size_t bytes, const AllocatorStats& stats) override {
    const std::size_t in_use = owner != nullptr ? owner->stats().bytes_in_use : stats.bytes_in_use;
    ENGINE_FAIL("fake out of memory: asked for {} bytes, {} in use", bytes, in_use);
  }

  const Allocator* owner = nullptr;
  int calls = 0, frees = 0;
  std::function<void()> on_free;

 private:
  std::size_t capacity_, used_ = 0;
  std::map<void*, std::size_t> sizes_;
};

struct Cache {
  explicit Cache(std::size_t capacity) {
    auto fake = std::make_unique<FakeRawAllocator>(capacity);
    raw = fake.get();
    cache = std::make_shared<CachingAllocator>(std::move(fake));
    raw->owner = cache.get();
  }
  FakeRawAllocator* raw;
  std::shared_ptr<CachingAllocator> cache;
};

TEST(CachingAllocator, OutOfMemoryThrowsItsMessageInsteadOfDeadlocking) {
  Cache c(1 << 20);
  auto cache = c.cache;
  const std::string outcome = testing::run_with_timeout(
      [cache]() -> std::string {
        try {
          (void)cache->allocate(std::size_t{4} << 20, nullptr);
          return "allocated";
        } catch (const Error& e) {
          return e.what();
        }
      },
      std::chrono::seconds(20));
  EXPECT_NE(outcome.find("fake out of memory: asked for 4194304 bytes, 0 in use"), std::string::npos)
      << outcome;
  if (outcome.find("timed out") == std::string::npos) {
    EXPECT_EQ(cache->stats().bytes_in_use, 0u) << "a failed allocation holds nothing";
  }
}

TEST(CachingAllocator, OutOfMemoryReleasesCachedBlocksAndRetriesFirst) {
  Cache c(4 << 20);
  void* a = c.cache->allocate(2 << 20, nullptr);
  c.cache->deallocate(a);  // cached: 2 MiB held, 2 MiB left in the fake
  EXPECT_EQ(c.cache->stats().bytes_cached, std::size_t{2} << 20);
  void* b = c.cache->allocate(4 << 20, nullptr);  // fits only once the cached block is returned
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(c.raw->frees, 1);
  const AllocatorStats s = c.cache->stats();
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.bytes_in_use, std::size_t{4} << 20);
  EXPECT_EQ(s.driver_allocs, 2u);
  EXPECT_EQ(s.driver_frees, 1u);
  c.cache->deallocate(b);
}

TEST(CachingAllocator, ReusesABlockOnlyForTheSameSizeAndStream) {
  Cache c(64 << 20);
  int s1 = 0, s2 = 0;  // two distinct "stream handles"
  void* a = c.cache->allocate(1000, &s1);
  c.cache->deallocate(a);
  void* on_other_stream = c.cache->allocate(1000, &s2);
  EXPECT_NE(on_other_stream, a);
  void* other_size = c.cache->allocate(5000, &s1);
  EXPECT_NE(other_size, a);
  void* same = c.cache->allocate(1000, &s1);
  EXPECT_EQ(same, a);
  EXPECT_EQ(c.raw->calls, 3);
  for (void* p : {on_other_stream, other_size, same}) c.cache->deallocate(p);
}

// A destroyed stream's handle value may come back for a new stream while the old stream's work still uses
// a block cached under it: after retire_stream, the new stream must get fresh memory.
TEST(CachingAllocator, ARetiredStreamHandleReusedByANewStreamGetsNoOldBlock) {
  Cache c(64 << 20);
  int handle = 0;
  void* old_block = c.cache->allocate(1000, &handle);
  void* freed_late = c.cache->allocate(1000, &handle);
  c.cache->deallocate(old_block);   // cached, its queued work may still run
  c.cache->retire_stream(&handle);  // the stream is destroyed ...
  c.cache->deallocate(freed_late);  // ... and a block of its own is freed afterwards
  std::set<void*> fresh;
  for (int i = 0; i < 2; ++i) fresh.insert(c.cache->allocate(1000, &handle));  // the "new" stream
  EXPECT_FALSE(fresh.contains(old_block)) << "a block cached for the destroyed stream went to its successor";
  EXPECT_FALSE(fresh.contains(freed_late)) << "a block freed after the stream's end went to its successor";
  // The new stream's own blocks are cached as usual, and release_cached returns the retired ones.
  for (void* p : fresh) c.cache->deallocate(p);
  void* again = c.cache->allocate(1000, &handle);
  EXPECT_TRUE(fresh.contains(again));
  c.cache->deallocate(again);
  c.cache->release_cached();
  EXPECT_EQ(c.raw->frees, 4);
  EXPECT_EQ(c.cache->stats().bytes_cached, 0u);
}

TEST(CachingAllocator, DestroyingTheCacheReturnsItsCachedBlocks) {
  int frees_seen = 0;
  {
    auto fake = std::make_unique<FakeRawAllocator>(64 << 20);
    FakeRawAllocator* raw = fake.get();
    CachingAllocator cache(std::move(fake));
    void* a = cache.allocate(1000, nullptr);
    void* b = cache.allocate(5000, nullptr);
    cache.deallocate(a);
    cache.deallocate(b);
    EXPECT_EQ(raw->frees, 0) << "freed blocks are cached, not returned";
    // The fake dies with the cache; count its frees through a hook taken before.
    raw->on_free = [&frees_seen] { ++frees_seen; };
  }
  EXPECT_EQ(frees_seen, 2);
}

TEST(CachingAllocator, FreeingAForeignPointerIsAnErrorNamingTheAllocator) {
  Cache c(1 << 20);
  int x = 0;
  try {
    c.cache->deallocate(&x);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fake allocator"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace engine
