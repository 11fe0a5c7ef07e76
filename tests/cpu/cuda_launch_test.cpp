// The launch geometry of kernels/cuda (kernels/cuda/launch.h), checked on the host: the grid-stride range is
// __host__ __device__, and its device form only supplies blockIdx/threadIdx/gridDim/blockDim, so replaying
// every (block, thread) of a grid here shows the exact index set a kernel visits. Also the 128-bit path's
// index plan (groups of 4, then a scalar tail) and its alignment test. Runs in every build, with or without
// CUDA; the DeviceGuard checks need only the CUDA runtime, not a device.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/device.h"
#include "core/error.h"
#include "kernels/cuda/launch.h"

#if ENGINE_HAVE_CUDA
#include "core/device_guard.h"
#endif

namespace engine {
namespace {

using cuda::detail::grid_for;
using cuda::detail::grid_stride_for;
using cuda::detail::StrideRange;

// How often each index of [0, end) is visited when every thread of a `blocks` x `block_size` grid walks
// grid_stride_for(begin, end, ...); an index outside [begin, end) fails the test.
std::vector<int> visits(std::int64_t begin, std::int64_t end, std::int64_t blocks, std::int64_t block_size) {
  std::vector<int> count(static_cast<std::size_t>(end), 0);
  for (std::int64_t b = 0; b < blocks; ++b) {
    for (std::int64_t t = 0; t < block_size; ++t) {
      for (const std::int64_t i : grid_stride_for(begin, end, b, t, blocks, block_size)) {
        EXPECT_TRUE(i >= begin && i < end) << i << " outside [" << begin << ", " << end << ")";
        if (i >= 0 && i < end) ++count[static_cast<std::size_t>(i)];
      }
    }
  }
  return count;
}

void expect_each_once(const std::vector<int>& count, std::int64_t begin, const std::string& where) {
  for (std::size_t i = 0; i < count.size(); ++i) {
    EXPECT_EQ(count[i], static_cast<std::int64_t>(i) >= begin ? 1 : 0) << where << " index " << i;
  }
}

TEST(CudaGridStride, EveryIndexOnceForOddSizesAndGrids) {
  for (const std::int64_t n : {0, 1, 3, 4, 5, 31, 32, 33, 255, 256, 257, 1000, 1029}) {
    for (const std::int64_t blocks : {1, 2, 3, 7}) {
      for (const std::int64_t block_size : {1, 3, 32, 256}) {
        const std::string where = "n=" + std::to_string(n) + " blocks=" + std::to_string(blocks) +
                                  " block=" + std::to_string(block_size);
        expect_each_once(visits(0, n, blocks, block_size), 0, where);
      }
    }
  }
}

TEST(CudaGridStride, AnOffsetRangeCoversExactlyItsTail) {
  for (const std::int64_t n : {0, 1, 5, 7, 257}) {
    for (const std::int64_t begin : {std::int64_t{0}, n / 4 * 4, n}) {
      expect_each_once(visits(begin, n, 3, 32), begin,
                       "n=" + std::to_string(n) + " begin=" + std::to_string(begin));
    }
  }
}

TEST(CudaGridStride, IndicesPastInt32DoNotWrap) {
  // A grid step of 2^31 from 2^32 - 1: a 32-bit index would wrap negative and loop or stop early.
  const std::int64_t first = (std::int64_t{1} << 32) - 1, step = std::int64_t{1} << 31;
  std::vector<std::int64_t> seen;
  for (const std::int64_t i : StrideRange(first, step, first + 4 * step)) seen.push_back(i);
  ASSERT_EQ(seen.size(), 4u);
  for (std::size_t k = 0; k < seen.size(); ++k)
    EXPECT_EQ(seen[k], first + static_cast<std::int64_t>(k) * step);
  // The largest grid: the last thread's first index and the step are formed in 64 bits.
  const std::int64_t blocks = cuda::detail::kMaxBlocks, threads = 1024;
  const StrideRange last =
      grid_stride_for(0, std::int64_t{1} << 40, blocks - 1, threads - 1, blocks, threads);
  auto it = last.begin();
  EXPECT_EQ(*it, blocks * threads - 1);
  ++it;
  EXPECT_EQ(*it, 2 * blocks * threads - 1);
}

// The vector kernels (relu, residual_add, sgd, cast): groups g of grid_stride(n / 4) cover elements
// [4g, 4g + 4), then grid_stride(n / 4 * 4, n) covers the tail, on the grid grid_for(ceil_div(n, 4)).
TEST(CudaGridStride, VectorGroupsAndScalarTailCoverEachElementOnce) {
  for (std::int64_t n = 0; n <= 1029; n += (n < 40 ? 1 : 97)) {
    const std::int64_t blocks = grid_for(cuda::detail::ceil_div(n, 4)), block_size = cuda::detail::kBlock;
    std::vector<int> count(static_cast<std::size_t>(n), 0);
    for (std::int64_t b = 0; b < blocks; ++b) {
      for (std::int64_t t = 0; t < block_size; ++t) {
        for (const std::int64_t g : grid_stride_for(0, n / 4, b, t, blocks, block_size)) {
          for (std::int64_t k = 0; k < 4; ++k) ++count[static_cast<std::size_t>(4 * g + k)];
        }
        for (const std::int64_t i : grid_stride_for(n / 4 * 4, n, b, t, blocks, block_size)) {
          ++count[static_cast<std::size_t>(i)];
        }
      }
    }
    expect_each_once(count, 0, "n=" + std::to_string(n));
  }
}

TEST(CudaGridFor, AtLeastOneBlockAtMostTheCap) {
  EXPECT_EQ(grid_for(0), 1u);
  EXPECT_EQ(grid_for(1), 1u);
  EXPECT_EQ(grid_for(256), 1u);
  EXPECT_EQ(grid_for(257), 2u);
  EXPECT_EQ(grid_for(9, 8), 2u);
  EXPECT_EQ(grid_for(std::int64_t{1} << 40), static_cast<unsigned>(cuda::detail::kMaxBlocks));
}

TEST(CudaVectorPath, TakenOnlyWhereEveryPointerIs16ByteAligned) {
  alignas(16) float buf[16] = {};
  EXPECT_TRUE(cuda::detail::vector_aligned(buf, buf + 4, buf + 8));
  for (int off = 1; off < 4; ++off) {
    EXPECT_FALSE(cuda::detail::vector_aligned(buf + off)) << off;
    EXPECT_FALSE(cuda::detail::vector_aligned(buf, buf + 4, buf + off)) << off;  // one view is enough
  }
  EXPECT_TRUE(cuda::detail::vector_aligned(buf, static_cast<const float*>(nullptr)));  // a skipped output
}

#if ENGINE_HAVE_CUDA
TEST(DeviceGuard, AMissingDeviceThrowsWithTheCallAndTheNothrowFormDoesNot) {
  const int bad_device = device_count();  // invalid with or without a GPU
  try {
    DeviceGuard guard(bad_device);
    FAIL() << "DeviceGuard(" << bad_device << ") did not throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("device_guard.h"), std::string::npos) << what;
    EXPECT_NE(what.find("CUDA error: "), std::string::npos) << what;
  }
  EXPECT_NO_THROW(DeviceGuard(bad_device, std::nothrow));
}
#endif

}  // namespace
}  // namespace engine
