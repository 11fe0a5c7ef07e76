#include "kernels/cpu_fast/conv2d_weights_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_fast/bf16_io.h"
#include "kernels/cpu_fast/conv2d_taps.h"
#include "kernels/cpu_fast/gemm.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {
namespace {

using Index = std::int64_t;

std::atomic<WeightsGemm> g_setting{WeightsGemm::Rule};

// One activation tensor [N, C, H, W] in NCHW or a blocked layout (core/layout.h): where the plane of (n, c)
// starts and how far apart its consecutive pixels lie (1, or the block).
template <typename T>
struct Planes {
  const T* data;
  Index channels, pixels;  // C and H W
  Index block;             // 0: NCHW

  Index step() const { return block == 0 ? 1 : block; }
  const T* plane(Index n, Index c) const {
    if (block == 0) return data + (n * channels + c) * pixels;
    return data + ((n * (channels / block) + c / block) * pixels) * block + c % block;
  }
};

template <typename T>
Planes<T> planes_of(const T* data, int channels, int h, int w, Layout layout) {
  const Index block = layout_block(layout);
  ENGINE_CHECK(layout == Layout::NCHW || (block > 0 && channels % block == 0),
               "conv2d_weights_gemm: activations NCHW, or blocked with whole blocks ({} channels, layout {})",
               channels, static_cast<int>(layout));
  return {data, channels, static_cast<Index>(h) * w, block};
}

// col rows [c R S + r S + s], `samples` samples from n0: each row P Q values a sample, the tap's inputs.
template <typename T>
void im2col(const Conv2dShape& g, const Planes<T>& x, Index n0, Index samples, T* col) {
  const int P = g.p(), Q = g.q(), taps = g.r * g.s;
  const Index rows = static_cast<Index>(g.c) * taps, len = samples * P * Q;
  const Index step = x.step(), col_step = step * g.stride_w;
  const T zero{};
#pragma omp parallel for if (rows * len >= kParallelMinElements) schedule(static)
  for (Index row = 0; row < rows; ++row) {
    const Index c = row / taps;
    const int r = static_cast<int>(row % taps) / g.s, s = static_cast<int>(row % taps) % g.s;
    const int offset = s * g.dilation_w - g.pad_w;
    const conv_taps::Range qs = conv_taps::valid(offset, g.stride_w, g.w, Q);
    T* out = col + row * len;
    for (Index n = 0; n < samples; ++n) {
      const T* x_plane = x.plane(n0 + n, c);
      for (int p = 0; p < P; ++p, out += Q) {
        const int ih = p * g.stride_h - g.pad_h + r * g.dilation_h;
        if (ih < 0 || ih >= g.h) {
          std::fill(out, out + Q, zero);
          continue;
        }
        const T* x_row = x_plane + (static_cast<Index>(ih) * g.w + offset) * step;
        std::fill(out, out + qs.lo, zero);
        for (int j = qs.lo; j < qs.hi; ++j) out[j] = x_row[static_cast<Index>(j) * col_step];
        std::fill(out + qs.hi, out + Q, zero);
      }
    }
  }
}

// dyt[k, n P Q + i] = dy[n0 + n, k, i] for the chunk's samples.
template <typename T>
void channels_first(const Conv2dShape& g, const Planes<T>& dy, Index n0, Index samples, T* dyt) {
  const Index pq = dy.pixels, len = samples * pq, step = dy.step();
#pragma omp parallel for if (g.k * len >= kParallelMinElements) schedule(static)
  for (Index k = 0; k < g.k; ++k)
    for (Index n = 0; n < samples; ++n) {
      const T* from = dy.plane(n0 + n, k);
      T* to = dyt + k * len + n * pq;
      if (step == 1) {
        std::copy(from, from + pq, to);
      } else {
        for (Index i = 0; i < pq; ++i) to[i] = from[i * step];
      }
    }
}

// db[k] = the sum of dy[:, k, :, :]: float32 plane sums, added in double.
template <typename T>
void bias_grad(const Conv2dShape& g, const Planes<T>& dy, float* db) {
  const Index pq = dy.pixels, step = dy.step();
#pragma omp parallel for if (static_cast <Index>(g.y_size()) >= kParallelMinElements) schedule(static)
  for (Index k = 0; k < g.k; ++k) {
    double acc = 0.0;
    for (Index n = 0; n < g.n; ++n) {
      const T* plane = dy.plane(n, k);
      float sum = 0.0f;
      for (Index i = 0; i < pq; ++i) sum += loaded(plane[i * step]);
      acc += static_cast<double>(sum);
    }
    db[k] = static_cast<float>(acc);
  }
}

template <typename T>
void weights_gemm(const Conv2dShape& g, const T* x_data, const T* dy_data, float* dw, float* db,
                  GemmLayouts layouts, long budget) {
  g.validate();
  ENGINE_CHECK(g.groups == 1, "conv2d_weights_gemm: dense convolutions only (groups {})", g.groups);
  ENGINE_CHECK(x_data != nullptr && dy_data != nullptr && dw != nullptr,
               "conv2d_weights_gemm: x, dy and dw must not be null (db may be)");
  const Planes<T> x = planes_of(x_data, g.c, g.h, g.w, layouts.x);
  const Planes<T> dy = planes_of(dy_data, g.k, g.p(), g.q(), layouts.dy);
  ENGINE_CHECK(budget > 0, "conv2d_weights_gemm: the column budget must be positive (got {})", budget);
  const Index pq = static_cast<Index>(g.p()) * g.q(), rows = static_cast<Index>(g.c) * g.r * g.s;
  const Index per_sample = rows * pq * static_cast<Index>(sizeof(T));
  // The fewest chunks under the budget, of even sizes (a small last chunk would run a poor GEMM).
  const Index most = std::clamp<Index>(budget / per_sample, 1, g.n);
  const Index chunks = (g.n + most - 1) / most, chunk = (g.n + chunks - 1) / chunks;
  // Scratch kept per thread across calls (a fresh 16 MiB each call would fault its pages in every time).
  thread_local std::vector<T> col, dyt;
  col.resize(static_cast<std::size_t>(rows * chunk * pq));
  dyt.resize(static_cast<std::size_t>(g.k * chunk * pq));
  for (Index n0 = 0; n0 < g.n; n0 += chunk) {
    const Index samples = std::min(chunk, g.n - n0), len = samples * pq;
    im2col(g, x, n0, samples, col.data());
    channels_first(g, dy, n0, samples, dyt.data());
    if constexpr (std::is_same_v<T, bfloat16>) {
      gemm_bf16(Trans::No, Trans::Yes, g.k, rows, len, dyt.data(), col.data(), dw, n0 > 0);
    } else {
      sgemm(Trans::No, Trans::Yes, g.k, rows, len, 1.0f, dyt.data(), len, col.data(), len,
            n0 > 0 ? 1.0f : 0.0f, dw, rows);
    }
  }
  if (db != nullptr) bias_grad(g, dy, db);
}

}  // namespace

// The rule, from benchmarks/RESULTS.md's per-layer timings (resnet18's shapes, batch 64, 2 threads,
// avx512_core_bf16, conv2d_weights_bench): on strided 3x3 convolutions and 3x3 outputs under 8x8, oneDNN
// 2.6.3's bf16 backward-weights takes 100-500 ms of CPU a call beside other processes (its float32 kernel on
// widened operands, which ran there before, 25-50 ms; this GEMM 14-28 ms); on stride-1 3x3 of 8x8 and more
// oneDNN's bf16 kernel holds up and is the faster, loaded or not; 1x1 kernels stay with it too (about 1 ms a
// call in resnet18's profile: little for a GEMM to win, and the loaded timings were mixed). float32: oneDNN's
// direct kernel beat the sgemm variant on those same shapes (or tied), so float32 never takes it. A fixed
// rule of the shape, not a timing, so that runs repeat bit for bit and a quiet moment cannot pick what a
// loaded machine runs badly.
bool weights_grad_gemm(const Conv2dShape& g, bool bf16) {
  const WeightsGemm w = g_setting.load(std::memory_order_relaxed);
  if (g.groups != 1 || w == WeightsGemm::Never) return false;
  if (w == WeightsGemm::Always) return true;
  const bool one_by_one = g.r == 1 && g.s == 1;
  return bf16 && !one_by_one && (g.stride_h > 1 || g.stride_w > 1 || g.p() * g.q() < 64);
}

void set_weights_gemm(WeightsGemm w) { g_setting.store(w, std::memory_order_relaxed); }

void conv2d_weights_gemm(const Conv2dShape& g, const float* x, const float* dy, float* dw, float* db,
                         GemmLayouts layouts, long col_budget_bytes) {
  weights_gemm(g, x, dy, dw, db, layouts, col_budget_bytes);
}

void conv2d_weights_gemm(const Conv2dShape& g, const bfloat16* x, const bfloat16* dy, float* dw, float* db,
                         GemmLayouts layouts, long col_budget_bytes) {
  weights_gemm(g, x, dy, dw, db, layouts, col_budget_bytes);
}

}  // namespace engine::cpu_fast
