#include "kernels/cpu_fast/global_avgpool.h"

#include "kernels/cpu/avgpool.h"
#include "kernels/cpu_fast/map.h"  // ENGINE_CPU_CLONES
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {
namespace {

constexpr int kLanes = 16;  // float partial sums per plane: one AVX-512 vector
constexpr int kBlock = 16;  // planes whose partial sums are folded together

// The means of planes [p0, p0 + count) (count <= kBlock). Each plane's first floor(H W / 16) * 16 elements
// go into 16 float partial sums (lane l takes i = l mod 16: one vector load and add per step, no horizontal
// step inside the plane), the rest into a double in order; then, across the block's planes in vector lanes,
// the lanes are widened and added to that double, divided by H W in double and rounded once to float.
// Always inlined: a call would run the baseline (SSE2) code from the vector clones.
[[gnu::always_inline]] inline void block_means(const float* x, float* y, std::int64_t p0, int count,
                                               std::int64_t hw, double size) {
  float part[kBlock][kLanes];
  double rest[kBlock];
  for (int q = 0; q < count; ++q) {
    const float* xp = x + (p0 + q) * hw;
    float lane[kLanes] = {};
    std::int64_t i = 0;
    for (; i + kLanes <= hw; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) lane[l] += xp[i + l];
    }
    for (int l = 0; l < kLanes; ++l) part[q][l] = lane[l];
    double r = 0.0;  // the last hw mod kLanes elements, in order
    for (; i < hw; ++i) r += static_cast<double>(xp[i]);
    rest[q] = r;
  }
  for (int q = 0; q < count; ++q) {
    const float* pq = part[q];
    double s = rest[q];
    for (int l = 0; l < kLanes; ++l) s += static_cast<double>(pq[l]);
    y[p0 + q] = static_cast<float>(s / size);
  }
}

ENGINE_CPU_CLONES void forward_planes(const float* x, float* y, std::int64_t planes, std::int64_t hw) {
  const auto size = static_cast<double>(hw);
  const std::int64_t blocks = (planes + kBlock - 1) / kBlock;
#pragma omp parallel for if (planes * hw >= kParallelMinElements) schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t p0 = b * kBlock;
    block_means(x, y, p0, static_cast<int>(planes - p0 < kBlock ? planes - p0 : kBlock), hw, size);
  }
}

ENGINE_CPU_CLONES void backward_planes(const float* dy, float* dx, std::int64_t planes, std::int64_t hw) {
  const auto count = static_cast<double>(hw);
#pragma omp parallel for if (planes * hw >= kParallelMinElements) schedule(static)
  for (std::int64_t p = 0; p < planes; ++p) {
    const auto g = static_cast<float>(static_cast<double>(dy[p]) / count);
    float* dxp = dx + p * hw;
    for (std::int64_t i = 0; i < hw; ++i) dxp[i] = g;
  }
}

}  // namespace

void global_avgpool_forward(int n, int c, int h, int w, const float* x, float* y) {
  cpu::check_global_avgpool_shape("global_avgpool_forward", n, c, h, w);
  forward_planes(x, y, static_cast<std::int64_t>(n) * c, static_cast<std::int64_t>(h) * w);
}

void global_avgpool_backward(int n, int c, int h, int w, const float* dy, float* dx) {
  cpu::check_global_avgpool_shape("global_avgpool_backward", n, c, h, w);
  backward_planes(dy, dx, static_cast<std::int64_t>(n) * c, static_cast<std::int64_t>(h) * w);
}

}  // namespace engine::cpu_fast
