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
  [[noreturn]] void out_of_memory(std::size_t bytes, const AllocatorStats& stats,
                                  const std::string& context) override {
    const std::size_t in_use = owner != nullptr ? owner->stats().bytes_in_use : stats.bytes_in_use;
    ENGINE_FAIL("fake out of memory: asked for {} bytes, {} in use {}", bytes, in_use, context);
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

// A captured graph replays into the addresses it was captured with: no block the capture allocated or
// freed may go to anyone else while the graph lives, even after the capture ended and the block was freed.
TEST(CachingAllocatorGraphPool, NoBlockOfACaptureIsReusedOutsideItWhileThePoolLives) {
  Cache c(64 << 20);
  int stream = 0;
  void* before = c.cache->allocate(1000, &stream);  // e.g. the previous step's activations
  const std::uint64_t pool = c.cache->create_graph_pool();
  EXPECT_NE(pool, 0u);
  c.cache->begin_graph_capture(&stream, pool);
  void* inside = c.cache->allocate(1000, &stream);
  EXPECT_NE(inside, before);
  c.cache->deallocate(before);  // freed during the capture: the graph's kernels used it
  void* scratch = c.cache->allocate(1000, &stream);
  EXPECT_EQ(scratch, before) << "inside one capture, a freed pool block is reused (replays keep the order)";
  c.cache->deallocate(scratch);
  c.cache->end_graph_capture(&stream);
  c.cache->deallocate(inside);  // freed after the capture, while the graph lives
  EXPECT_EQ(c.cache->graph_pool_bytes(pool), 2 * round_allocation_size(1000));

  std::set<void*> eager;
  for (int i = 0; i < 3; ++i) eager.insert(c.cache->allocate(1000, &stream));
  EXPECT_FALSE(eager.contains(before)) << "a block the capture freed went to eager work";
  EXPECT_FALSE(eager.contains(inside)) << "a block the capture allocated went to eager work";
  for (void* p : eager) c.cache->deallocate(p);

  c.cache->release_cached();  // e.g. an out-of-memory retry: the pool's blocks must stay
  EXPECT_EQ(c.cache->graph_pool_bytes(pool), 2 * round_allocation_size(1000));
  const int frees = c.raw->frees;
  EXPECT_EQ(frees, 3) << "release_cached returned only the three eager blocks";

  c.cache->release_graph_pool(pool);  // the graph is destroyed: its blocks are anyone's again
  EXPECT_EQ(c.cache->graph_pool_bytes(pool), 0u);
  std::set<void*> after;
  for (int i = 0; i < 2; ++i) after.insert(c.cache->allocate(1000, &stream));
  EXPECT_TRUE(after.contains(before));
  EXPECT_TRUE(after.contains(inside));
  for (void* p : after) c.cache->deallocate(p);
}

TEST(CachingAllocatorGraphPool, ABlockInUseWhenThePoolIsReleasedJoinsTheSharedCacheWhenFreed) {
  Cache c(64 << 20);
  int stream = 0;
  const std::uint64_t pool = c.cache->create_graph_pool();
  c.cache->begin_graph_capture(&stream, pool);
  void* kept = c.cache->allocate(1000, &stream);  // e.g. the loss the host keeps
  c.cache->end_graph_capture(&stream);
  c.cache->release_graph_pool(pool);
  c.cache->deallocate(kept);
  void* again = c.cache->allocate(1000, &stream);
  EXPECT_EQ(again, kept);
  c.cache->deallocate(again);
  c.cache->release_cached();
  EXPECT_EQ(c.raw->frees, 1);
  EXPECT_EQ(c.cache->stats().bytes_cached, 0u);
}

TEST(CachingAllocatorGraphPool, OnlyTheCapturingStreamAllocatesFromThePool) {
  Cache c(64 << 20);
  int capturing = 0, other = 0;
  const std::uint64_t pool = c.cache->create_graph_pool();
  c.cache->begin_graph_capture(&capturing, pool);
  void* elsewhere = c.cache->allocate(1000, &other);
  c.cache->deallocate(elsewhere);  // not the capturing stream's: stays shared
  c.cache->end_graph_capture(&capturing);
  EXPECT_EQ(c.cache->graph_pool_bytes(pool), 0u);
  void* again = c.cache->allocate(1000, &other);
  EXPECT_EQ(again, elsewhere);
  c.cache->deallocate(again);
  c.cache->release_graph_pool(pool);
}

// The warm-up step's blocks sit in the shared cache when the first capture starts with an empty pool; a miss
// the driver cannot serve then must not free them (cudaFree ends a capture): it is an out-of-memory error at
// once that names the capture. Outside a capture the same miss releases the cache and succeeds.
TEST(CachingAllocatorGraphPool, AMissThatDoesNotFitDuringACaptureNeverFrees) {
  Cache c(3000);
  int stream_storage = 0;
  void* stream = &stream_storage;
  c.cache->deallocate(c.cache->allocate(2048, stream));  // the warm-up's block, cached
  const std::uint64_t pool = c.cache->create_graph_pool();
  c.cache->begin_graph_capture(stream, pool);
  c.raw->on_free = [] { ADD_FAILURE() << "a block was freed during the capture"; };
  try {
    (void)c.cache->allocate(1536, stream);
    ADD_FAILURE() << "the allocation did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("while a CUDA graph is captured (into graph pool 1)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(c.raw->frees, 0);
  EXPECT_EQ(c.cache->stats().bytes_cached, 2048U);  // the cached block is still there
  c.cache->end_graph_capture(stream);
  c.raw->on_free = nullptr;
  void* p = c.cache->allocate(1536, stream);  // no capture: release the cache, retry, succeed
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(c.raw->frees, 1);
  c.cache->deallocate(p);
  c.cache->release_graph_pool(pool);
}

TEST(CachingAllocatorGraphPool, MisuseIsAnErrorNamingTheAllocator) {
  Cache c(64 << 20);
  int stream = 0;
  auto message_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(
      message_of([&] { c.cache->begin_graph_capture(&stream, 42); }).find("graph pool 42 does not exist"),
      std::string::npos);
  EXPECT_NE(message_of([&] { c.cache->end_graph_capture(&stream); }).find("never began"), std::string::npos);
  const std::uint64_t pool = c.cache->create_graph_pool();
  c.cache->begin_graph_capture(&stream, pool);
  EXPECT_NE(message_of([&] { c.cache->begin_graph_capture(&stream, pool); }).find("already captures"),
            std::string::npos);
  EXPECT_NE(message_of([&] { c.cache->release_graph_pool(pool); }).find("while a stream captures"),
            std::string::npos);
  c.cache->end_graph_capture(&stream);
  c.cache->release_graph_pool(pool);
  EXPECT_NE(message_of([&] { c.cache->release_graph_pool(pool); }).find("fake allocator"), std::string::npos);
}

}  // namespace
}  // namespace engine
