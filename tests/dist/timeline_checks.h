#pragma once
// What every Reducer timeline must show, on either device (tests/dist/dist_unit_test.cpp on the CPU through
// gloo, tests/dist/nccl_test.cpp on CUDA through NCCL): one record per bucket in launch order, whose bytes
// add up to the gradient buffer; for each bucket its last gradient, then its queueing, then the run of its
// all-reduce; every gradient before the end of backward; buckets queued in order and run one after the
// other on the communication side.

#include <cstddef>

#include <gtest/gtest.h>

#include "dist/reducer.h"

namespace engine::dist::testing {

inline void expect_ordered_timeline(const StepTimeline& t, std::size_t buckets, std::size_t gradient_bytes) {
  ASSERT_EQ(t.buckets.size(), buckets);
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < buckets; ++i) {
    const BucketTiming& b = t.buckets[i];
    EXPECT_EQ(b.bucket, i);
    bytes += b.bytes;
    EXPECT_GE(b.ready_ms, 0.0) << i;
    EXPECT_LE(b.ready_ms, b.queued_ms) << i;
    EXPECT_LE(b.queued_ms, b.start_ms) << i;
    EXPECT_LE(b.start_ms, b.end_ms) << i;
    EXPECT_LE(b.ready_ms, t.backward_end_ms) << i;
    if (i > 0) {
      EXPECT_LE(t.buckets[i - 1].queued_ms, b.queued_ms) << i;
      EXPECT_LE(t.buckets[i - 1].end_ms, b.start_ms) << i;
    }
  }
  EXPECT_EQ(bytes, gradient_bytes);
}

}  // namespace engine::dist::testing
