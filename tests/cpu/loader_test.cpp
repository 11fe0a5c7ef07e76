// The Loader on the CPU: an epoch yields exactly the sampler's indices in order with their labels, batch
// shapes (a last partial batch unless drop_last), bitwise agreement with the transform, real prefetching at
// depth 2 and 3, worker failures reaching the consumer, and shutdown mid-epoch without hanging; NHWC batches.

#include "data/loader.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace engine::data {
namespace {

using Clock = std::chrono::steady_clock;

// n images of 3x4x5 whose first two bytes spell their index (so a batch image names its sample) and whose
// other bytes vary; label = index % 7.
Dataset make_dataset(std::int64_t n) {
  Dataset d;
  d.channels = 3;
  d.height = 4;
  d.width = 5;
  for (int c = 0; c < 7; ++c) d.class_names.push_back("class" + std::to_string(c));
  for (std::int64_t i = 0; i < n; ++i) {
    d.labels.push_back(static_cast<std::int32_t>(i % 7));
    for (std::int64_t p = 0; p < d.image_bytes(); ++p) {
      std::uint8_t v = static_cast<std::uint8_t>((i * 31 + p * 17) % 256);
      if (p == 0) v = static_cast<std::uint8_t>(i % 256);
      if (p == 1) v = static_cast<std::uint8_t>(i / 256);
      d.images.push_back(v);
    }
  }
  return d;
}

// With the identity transform the output is x / 255, so the first two values give back the sample index.
std::int64_t sample_of(const float* image) {
  return std::lround(image[0] * 255.0f) + 256 * std::lround(image[1] * 255.0f);
}

struct Epoch {
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> batch_sizes;
};

Epoch run_epoch(Loader& loader, const Dataset& d, std::uint64_t epoch) {
  Epoch e;
  loader.start_epoch(epoch);
  Batch b;
  std::int64_t expected_index = 0;
  while (loader.next(b)) {
    EXPECT_EQ(b.index, expected_index++);
    EXPECT_EQ(b.images.shape(), (Shape{b.size(), d.channels, d.height, d.width}));
    EXPECT_EQ(b.images.dtype(), DType::F32);
    EXPECT_EQ(b.labels.dtype(), DType::I32);
    EXPECT_TRUE(b.images.device().is_cpu());
    e.batch_sizes.push_back(b.size());
    const float* images = b.images.data<float>();
    const std::int32_t* labels = b.labels.data<std::int32_t>();
    for (std::int64_t i = 0; i < b.size(); ++i) {
      const std::int64_t id = sample_of(images + i * d.image_bytes());
      e.ids.push_back(id);
      EXPECT_EQ(labels[i], d.labels[static_cast<std::size_t>(id)]) << "sample " << id;
    }
  }
  EXPECT_FALSE(loader.next(b)) << "the epoch stays finished";
  return e;
}

TEST(Loader, EpochYieldsTheSampledIndicesInOrderWithLabels) {
  const Dataset d = make_dataset(50);
  std::vector<std::int64_t> everyone;
  for (int rank = 0; rank < 3; ++rank) {
    LoaderOptions o;
    o.batch_size = 8;
    DistributedSampler sampler(50, 3, rank, true, 77);
    Loader loader(d, sampler, o);
    EXPECT_EQ(loader.num_batches(), 3);  // 17 samples per rank: 8, 8, 1
    for (std::uint64_t epoch : {0u, 1u}) {
      sampler.set_epoch(epoch);
      const Epoch e = run_epoch(loader, d, epoch);
      EXPECT_EQ(e.ids, sampler.indices()) << "rank " << rank << " epoch " << epoch;
      EXPECT_EQ(e.batch_sizes, (std::vector<std::int64_t>{8, 8, 1}));
      if (epoch == 0) everyone.insert(everyone.end(), e.ids.begin(), e.ids.end());
    }
  }
  std::sort(everyone.begin(), everyone.end());
  everyone.erase(std::unique(everyone.begin(), everyone.end()), everyone.end());
  EXPECT_EQ(everyone.size(), 50u) << "the ranks together cover the dataset";
}

TEST(Loader, DropLastKeepsOnlyFullBatches) {
  const Dataset d = make_dataset(50);
  LoaderOptions o;
  o.batch_size = 8;
  o.drop_last = true;
  Loader loader(d, DistributedSampler(50, 3, 1, true, 5), o);
  EXPECT_EQ(loader.num_batches(), 2);
  const Epoch e = run_epoch(loader, d, 0);
  EXPECT_EQ(e.batch_sizes, (std::vector<std::int64_t>{8, 8}));
}

TEST(Loader, EvalNoPadVisitsEachSampleOnce) {
  const Dataset d = make_dataset(23);
  std::vector<std::int64_t> all;
  for (int rank = 0; rank < 4; ++rank) {
    LoaderOptions o;
    o.batch_size = 4;
    Loader loader(d, DistributedSampler::eval_no_pad(23, 4, rank), o);
    const Epoch e = run_epoch(loader, d, 0);
    all.insert(all.end(), e.ids.begin(), e.ids.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> want(23);
  for (std::int64_t i = 0; i < 23; ++i) want[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(all, want);
}

TEST(Loader, BatchesEqualTheTransformBitwise) {
  const Dataset d = make_dataset(40);
  LoaderOptions o;
  o.batch_size = 6;
  o.transform = TransformConfig::train({0.49f, 0.48f, 0.45f}, {0.25f, 0.24f, 0.26f}, /*seed=*/3, /*pad=*/2);
  DistributedSampler sampler(40, 2, 1, true, 8);
  Loader loader(d, sampler, o);
  const Transform t(o.transform);
  for (std::uint64_t epoch : {0u, 1u}) {
    sampler.set_epoch(epoch);
    const std::vector<std::int64_t> ids = sampler.indices();
    loader.start_epoch(epoch);
    std::size_t seen = 0;
    std::vector<float> want(static_cast<std::size_t>(d.image_bytes()));
    for (Batch b; loader.next(b);) {
      for (std::int64_t i = 0; i < b.size(); ++i, ++seen) {
        const std::int64_t id = ids[seen];
        t.apply(d.image(id), d.channels, d.height, d.width, id, epoch, want.data());
        ASSERT_EQ(0, std::memcmp(b.images.data<float>() + i * d.image_bytes(), want.data(),
                                 want.size() * sizeof(float)))
            << "epoch " << epoch << " batch " << b.index << " row " << i;
      }
    }
    EXPECT_EQ(seen, ids.size());
  }
}

// image_layout NHWC: the same values as the NCHW batches, element (n, c, y, x) at ((n * H + y) * W + x) * C +
// c (indexed here by hand, not through the transpose the loader uses), and the tensors say NHWC.
TEST(Loader, NhwcBatchesAreTheNchwBatchesChannelsLast) {
  const Dataset d = make_dataset(40);
  LoaderOptions o;
  o.batch_size = 6;
  o.num_workers = 2;
  o.transform = TransformConfig::train({0.49f, 0.48f, 0.45f}, {0.25f, 0.24f, 0.26f}, /*seed=*/3, /*pad=*/2);
  LoaderOptions nhwc_options = o;
  nhwc_options.image_layout = Layout::NHWC;
  const DistributedSampler sampler(40, 1, 0, true, 8);
  Loader nchw(d, sampler, o), nhwc(d, sampler, nhwc_options);
  const std::int64_t C = d.channels, H = d.height, W = d.width;
  for (std::uint64_t epoch : {0u, 1u}) {
    nchw.start_epoch(epoch);
    nhwc.start_epoch(epoch);
    Batch a, b;
    while (nchw.next(a)) {
      ASSERT_TRUE(nhwc.next(b));
      ASSERT_EQ(b.images.shape(), a.images.shape());
      EXPECT_EQ(b.images.layout(), Layout::NHWC);
      EXPECT_EQ(a.images.layout(), Layout::NCHW);
      EXPECT_EQ(b.labels.to_vector<std::int32_t>(), a.labels.to_vector<std::int32_t>());
      const float* x = a.images.data<float>();
      const float* y = b.images.data<float>();
      for (std::int64_t n = 0; n < a.size(); ++n) {
        for (std::int64_t c = 0; c < C; ++c) {
          for (std::int64_t p = 0; p < H * W; ++p) {
            ASSERT_EQ(y[(n * H * W + p) * C + c], x[(n * C + c) * H * W + p])
                << "epoch " << epoch << " batch " << a.index << " (" << n << ", " << c << ", " << p << ")";
          }
        }
      }
    }
    EXPECT_FALSE(nhwc.next(b));
  }
}

// With depth d and the consumer holding back after batch 0, the workers assemble batches 1..d and no more.
void check_prefetch(int depth, int workers) {
  const Dataset d = make_dataset(64);
  std::atomic<std::int64_t> highest{-1};
  LoaderOptions o;
  o.batch_size = 4;
  o.prefetch_depth = depth;
  o.num_workers = workers;
  o.before_batch = [&](std::int64_t k) {
    std::int64_t h = highest.load();
    while (k > h && !highest.compare_exchange_weak(h, k)) {
    }
  };
  DistributedSampler sampler(64, 1, 0, false);
  Loader loader(d, sampler, o);
  loader.start_epoch(0);
  Batch b;
  ASSERT_TRUE(loader.next(b));
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (highest.load() < depth && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(highest.load(), depth) << "batches 1.." << depth
                                   << " are assembled while the consumer holds batch 0";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(highest.load(), depth) << "and not more than depth ahead";
  std::int64_t count = 1;
  while (loader.next(b)) ++count;
  EXPECT_EQ(count, 16);
}

TEST(Loader, PrefetchesDepth2) { check_prefetch(2, 1); }
TEST(Loader, PrefetchesDepth3) { check_prefetch(3, 1); }
TEST(Loader, PrefetchesDepth3WithThreeWorkers) { check_prefetch(3, 3); }

TEST(Loader, ManyWorkersKeepOrder) {
  const Dataset d = make_dataset(200);
  for (int workers : {2, 4}) {
    LoaderOptions o;
    o.batch_size = 7;
    o.num_workers = workers;
    o.prefetch_depth = 3;
    // Uneven work, so that workers finish out of order.
    o.before_batch = [](std::int64_t k) {
      std::this_thread::sleep_for(std::chrono::microseconds((k % 3) * 300));
    };
    DistributedSampler sampler(200, 1, 0, true, 4);
    Loader loader(d, sampler, o);
    EXPECT_EQ(run_epoch(loader, d, 0).ids, sampler.indices());
  }
}

TEST(Loader, WorkerExceptionReachesTheConsumer) {
  const Dataset d = make_dataset(40);
  for (int workers : {1, 2}) {
    for (bool engine_error : {false, true}) {
      LoaderOptions o;
      o.batch_size = 4;
      o.num_workers = workers;
      o.before_batch = [engine_error](std::int64_t k) {
        if (k != 2) return;
        if (engine_error) ENGINE_FAIL("injected failure at batch {}", k);
        throw std::runtime_error("injected failure");
      };
      Loader loader(d, DistributedSampler(40, 1, 0, false), o);
      loader.start_epoch(0);
      Batch b;
      EXPECT_TRUE(loader.next(b));
      EXPECT_TRUE(loader.next(b));
      try {
        loader.next(b);
        ADD_FAILURE() << "batch 2 should have failed";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("injected failure"), std::string::npos) << e.what();
      }
      EXPECT_THROW(loader.next(b), Error) << "the failure persists";
      // A new epoch starts clean (the hook still fails at batch 2, so stop at 2).
      loader.start_epoch(1);
      EXPECT_TRUE(loader.next(b));
    }
  }
}

TEST(Loader, DestructionMidEpochDoesNotHang) {
  const Dataset d = make_dataset(400);
  for (int consumed : {0, 1, 5}) {
    const auto start = Clock::now();
    {
      LoaderOptions o;
      o.batch_size = 4;
      o.num_workers = 2;
      o.prefetch_depth = 3;
      o.before_batch = [](std::int64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(5)); };
      Loader loader(d, DistributedSampler(400, 1, 0), o);
      loader.start_epoch(0);
      Batch b;
      for (int i = 0; i < consumed; ++i) ASSERT_TRUE(loader.next(b));
    }
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(2)) << "consumed " << consumed;
  }
  // Restarting an unfinished epoch abandons it cleanly.
  LoaderOptions o;
  o.batch_size = 4;
  DistributedSampler sampler(400, 1, 0, true, 1);
  Loader loader(d, sampler, o);
  loader.start_epoch(0);
  Batch b;
  ASSERT_TRUE(loader.next(b));
  sampler.set_epoch(1);
  EXPECT_EQ(run_epoch(loader, d, 1).ids, sampler.indices());
}

TEST(Loader, NextWithoutStartEpochUsesTheSamplersEpoch) {
  const Dataset d = make_dataset(10);
  DistributedSampler sampler(10, 1, 0, true, 6);
  sampler.set_epoch(4);
  LoaderOptions o;
  o.batch_size = 10;
  Loader loader(d, sampler, o);
  Batch b;
  ASSERT_TRUE(loader.next(b));
  std::vector<std::int64_t> ids;
  for (std::int64_t i = 0; i < b.size(); ++i)
    ids.push_back(sample_of(b.images.data<float>() + i * d.image_bytes()));
  EXPECT_EQ(ids, sampler.indices());
}

TEST(Loader, BadOptionsThrow) {
  const Dataset d = make_dataset(10);
  const DistributedSampler sampler(10, 1, 0);
  auto with = [&](auto change) {
    LoaderOptions o;
    change(o);
    return o;
  };
  EXPECT_THROW(Loader(d, sampler, with([](LoaderOptions& o) { o.batch_size = 0; })), Error);
  EXPECT_THROW(Loader(d, sampler, with([](LoaderOptions& o) { o.prefetch_depth = 0; })), Error);
  EXPECT_THROW(Loader(d, sampler, with([](LoaderOptions& o) { o.num_workers = 0; })), Error);
  EXPECT_THROW(Loader(d, sampler, with([](LoaderOptions& o) { o.gpu_resident = true; })), Error);
  EXPECT_THROW(
      Loader(d, sampler, with([](LoaderOptions& o) { o.transform = TransformConfig::eval({0.5f}, {1.0f}); })),
      Error);
  EXPECT_THROW(Loader(d, DistributedSampler(11, 1, 0), LoaderOptions{}), Error);
  // A CUDA device that does not exist (none exists here, or the build has no CUDA).
  EXPECT_THROW(Loader(d, sampler, with([](LoaderOptions& o) { o.device = Device::cuda(64); })), Error);
}

}  // namespace
}  // namespace engine::data
