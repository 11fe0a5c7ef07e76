#include "kernels/cpu_fast/channel_layernorm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/channel_layernorm_math.h"
#include "kernels/cpu_fast/map.h"  // ENGINE_CPU_CLONES
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

namespace {

// NCHW keeps a pixel's channels H*W apart: a block of kBlock neighbouring pixels walks each channel's
// contiguous run at once (vectorized, cache lines used whole), each pixel's sums in the reference's order.
constexpr std::int64_t kBlock = 64;

struct Block {
  std::int64_t base = 0, len = 0;  // the first pixel's offset in x, the pixels in the block
};

std::int64_t block_count(const ChannelAffineShape& s) { return s.outer * ((s.inner + kBlock - 1) / kBlock); }

Block block_of(const ChannelAffineShape& s, std::int64_t b) {
  const std::int64_t per_outer = (s.inner + kBlock - 1) / kBlock;
  const std::int64_t o = b / per_outer, i0 = (b % per_outer) * kBlock;
  return {o * s.channels * s.inner + i0, std::min(kBlock, s.inner - i0)};
}

// The block's pixels' moments, as pixel_moments computes them, into separate arrays of means and 1 / std
// (a vector load each, where an array of PixelMoments interleaves them). Always inlined: a call would run the
// baseline (SSE2) code from the vector clones.
struct BlockMoments {
  std::array<double, kBlock> mean, rstd;
  PixelMoments operator[](std::int64_t i) const {
    return {mean[static_cast<std::size_t>(i)], rstd[static_cast<std::size_t>(i)]};
  }
};

[[gnu::always_inline]] inline void block_moments(const ChannelAffineShape& s, double eps, const float* x,
                                                 const Block& k, BlockMoments& m) {
  std::array<double, kBlock> sum{}, var{};
  for (std::int64_t c = 0; c < s.channels; ++c) {
    const float* xc = x + k.base + c * s.inner;
    for (std::int64_t i = 0; i < k.len; ++i) sum[i] += static_cast<double>(xc[i]);
  }
  const auto n = static_cast<double>(s.channels);
  for (std::int64_t i = 0; i < k.len; ++i) m.mean[i] = sum[i] / n;
  for (std::int64_t c = 0; c < s.channels; ++c) {
    const float* xc = x + k.base + c * s.inner;
    for (std::int64_t i = 0; i < k.len; ++i) {
      const double d = static_cast<double>(xc[i]) - m.mean[i];
      var[i] += d * d;
    }
  }
  for (std::int64_t i = 0; i < k.len; ++i) m.rstd[i] = 1.0 / std::sqrt(var[i] / n + eps);
}

}  // namespace

ENGINE_CPU_CLONES void channel_layernorm_forward(const ChannelAffineShape& s, double eps, const float* x,
                                                 const float* gamma, const float* beta, float* y) {
  s.validate();
  ENGINE_CHECK(x != nullptr && y != nullptr, "channel_layernorm_forward: null x or y");
  if (s.inner == 1) {  // NHWC, [N, F]: each pixel's channels are contiguous
#pragma omp parallel for if (s.numel() >= kParallelMinElements) schedule(static)
    for (std::int64_t p = 0; p < s.outer; ++p)
      pixel_layernorm_forward(x + p * s.channels, gamma, beta, y + p * s.channels, s.channels, 1, eps);
    return;
  }
#pragma omp parallel for if (s.numel() >= kParallelMinElements) schedule(static)
  for (std::int64_t b = 0; b < block_count(s); ++b) {
    const Block k = block_of(s, b);
    BlockMoments m;
    block_moments(s, eps, x, k, m);
    for (std::int64_t c = 0; c < s.channels; ++c) {
      const double g = gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0;
      const double bt = beta != nullptr ? static_cast<double>(beta[c]) : 0.0;
      const std::int64_t at = k.base + c * s.inner;
      for (std::int64_t i = 0; i < k.len; ++i)
        y[at + i] = layernorm_output(static_cast<double>(x[at + i]), m[i], g, bt);
    }
  }
}

ENGINE_CPU_CLONES void channel_layernorm_backward(const ChannelAffineShape& s, double eps, const float* x,
                                                  const float* gamma, const float* dy, float* dx,
                                                  float* dgamma, float* dbeta) {
  s.validate();
  ENGINE_CHECK(x != nullptr && dy != nullptr, "channel_layernorm_backward: null x or dy");
  const bool params = dgamma != nullptr || dbeta != nullptr;
  if (s.inner == 1) {  // NHWC, [N, F]: a pixel per row; the parameter sums one thread per channel
    std::vector<PixelMoments> moments(static_cast<std::size_t>(s.outer));
#pragma omp parallel for if (s.numel() >= kParallelMinElements) schedule(static)
    for (std::int64_t p = 0; p < s.outer; ++p) {
      const std::int64_t at = p * s.channels;
      moments[static_cast<std::size_t>(p)] = pixel_layernorm_backward(
          x + at, gamma, dy + at, dx != nullptr ? dx + at : nullptr, s.channels, 1, eps);
    }
    if (!params) return;
#pragma omp parallel for if (s.numel() >= kParallelMinElements) schedule(static)
    for (std::int64_t c = 0; c < s.channels; ++c) {
      double sum_dyx = 0.0, sum_dy = 0.0;
      for (std::int64_t p = 0; p < s.outer; ++p) {
        const PixelMoments& m = moments[static_cast<std::size_t>(p)];
        const double d = static_cast<double>(dy[p * s.channels + c]);
        sum_dyx += d * (static_cast<double>(x[p * s.channels + c]) - m.mean) * m.rstd;
        sum_dy += d;
      }
      if (dgamma != nullptr) dgamma[c] = static_cast<float>(sum_dyx);
      if (dbeta != nullptr) dbeta[c] = static_cast<float>(sum_dy);
    }
    return;
  }
  // NCHW: each block's sums of dy * xhat and dy per channel, then each channel's over the blocks in order
  // (deterministic whatever the thread count).
  const std::int64_t blocks = block_count(s);
  std::vector<double> partial(params ? static_cast<std::size_t>(blocks * s.channels * 2) : 0);
#pragma omp parallel for if (s.numel() >= kParallelMinElements) schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const Block k = block_of(s, b);
    BlockMoments m;
    block_moments(s, eps, x, k, m);
    std::array<double, kBlock> sum_g{}, sum_gx{};
    for (std::int64_t c = 0; c < s.channels; ++c) {
      const double gm = gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0;
      const std::int64_t at = k.base + c * s.inner;
      double dyx = 0.0, dsum = 0.0;  // in vector lanes: double sums in any order (the test's 2^-40)
#pragma omp simd reduction(+ : dyx, dsum)
      for (std::int64_t i = 0; i < k.len; ++i) {
        const double d = static_cast<double>(dy[at + i]);
        const double xhat = (static_cast<double>(x[at + i]) - m.mean[i]) * m.rstd[i];
        sum_g[i] += d * gm;
        sum_gx[i] += d * gm * xhat;
        dyx += d * xhat;
        dsum += d;
      }
      if (params) {
        partial[static_cast<std::size_t>((b * s.channels + c) * 2)] = dyx;
        partial[static_cast<std::size_t>((b * s.channels + c) * 2 + 1)] = dsum;
      }
    }
    if (dx == nullptr) continue;
    const auto n = static_cast<double>(s.channels);
    for (std::int64_t i = 0; i < k.len; ++i) {  // the pixels' means of g and g xhat, divided once
      sum_g[i] /= n;
      sum_gx[i] /= n;
    }
    for (std::int64_t c = 0; c < s.channels; ++c) {
      const double gm = gamma != nullptr ? static_cast<double>(gamma[c]) : 1.0;
      const std::int64_t at = k.base + c * s.inner;
      for (std::int64_t i = 0; i < k.len; ++i) {
        const double g = static_cast<double>(dy[at + i]) * gm;
        const double xhat = (static_cast<double>(x[at + i]) - m.mean[i]) * m.rstd[i];
        dx[at + i] = layernorm_input_grad(g, xhat, m[i], sum_g[i], sum_gx[i]);
      }
    }
  }
  if (!params) return;
#pragma omp parallel for if (s.channels * blocks >= kParallelMinElements) schedule(static)
  for (std::int64_t c = 0; c < s.channels; ++c) {
    double sum_dyx = 0.0, sum_dy = 0.0;
    for (std::int64_t b = 0; b < blocks; ++b) {
      sum_dyx += partial[static_cast<std::size_t>((b * s.channels + c) * 2)];
      sum_dy += partial[static_cast<std::size_t>((b * s.channels + c) * 2 + 1)];
    }
    if (dgamma != nullptr) dgamma[c] = static_cast<float>(sum_dyx);
    if (dbeta != nullptr) dbeta[c] = static_cast<float>(sum_dy);
  }
}

}  // namespace engine::cpu_fast
