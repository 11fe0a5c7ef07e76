#pragma once
// What the per-layer CPU convolution benchmarks (conv2d_weights_bench, conv2d_algo_bench) share: the layer's
// shape at batch 64, deterministic operands, the process's CPU time and a median.

#include <algorithm>
#include <cstddef>
#include <ctime>
#include <vector>

#include "kernels/shapes.h"

namespace engine::bench::conv {

// c -> k channels on hw x hw, an r x r kernel, padding r / 2.
inline Conv2dShape shape(int c, int hw, int k, int r, int stride) {
  Conv2dShape g;
  g.n = 64;
  g.c = c;
  g.k = k;
  g.h = g.w = hw;
  g.r = g.s = r;
  g.stride_h = g.stride_w = stride;
  g.pad_h = g.pad_w = r / 2;
  return g;
}

struct Row {
  const char* name;
  Conv2dShape g;
};

inline std::vector<float> filled(std::size_t n, float base) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = base + 0.001f * static_cast<float>(i % 1997) - 1.0f;
  return v;
}

// The CPU time of all the process's threads: with passively waiting OpenMP threads the work done, which a
// competing process inflates far less than the wall clock.
inline double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace engine::bench::conv
