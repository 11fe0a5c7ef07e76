#include "kernels/cpu_fast/maxpool2d_blocked.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_fast/bf16_io.h"
#include "kernels/cpu_fast/channel_block.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {
namespace {

using std::int64_t;

// One output cell's B lanes: the window [h0, h1) x [w0, w1) of plane xp ([H, W, B]) scanned as
// maxpool2d.cpp's generic loop scans it, each lane its own channel.
template <int B, typename T>
void window_max(const Pool2dShape& s, const T* xp, int h0, int h1, int w0, int w1, T* y, std::int32_t* at) {
  std::array<float, B> best;
  std::array<std::int32_t, B> index;
  best.fill(-std::numeric_limits<float>::infinity());
  index.fill(h0 * s.w + w0);
  for (int ih = h0; ih < h1; ++ih) {
    for (int iw = w0; iw < w1; ++iw) {
      const T* v = xp + static_cast<int64_t>(ih * s.w + iw) * B;
      const std::int32_t cell = ih * s.w + iw;
#pragma omp simd
      for (int j = 0; j < B; ++j) {
        const float x = loaded(v[j]);
        const bool take = (x > best[j]) | (x != x);  // strict '>': the first maximum wins a tie; NaN wins
        best[j] = take ? x : best[j];
        index[j] = take ? cell : index[j];
      }
    }
  }
  for (int j = 0; j < B; ++j) {
    y[j] = stored<T>(best[j]);
    at[j] = index[j];
  }
}

template <int B, typename T>
void forward(const Pool2dShape& s, const T* x, T* y, std::int32_t* argmax) {
  const int p = s.p(), q = s.q();
  const int64_t planes = static_cast<int64_t>(s.n) * (s.c / B);
  const int64_t plane_in = static_cast<int64_t>(s.h) * s.w * B, plane_out = static_cast<int64_t>(p) * q * B;
#pragma omp parallel for if (planes * plane_in >= kParallelMinElements) schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * plane_in;
    for (int op = 0; op < p; ++op) {
      // The window clipped to the real input; the clipped-away cells are padding (-inf), never a max.
      const auto [h0, h1] = s.rows(op);
      for (int oq = 0; oq < q; ++oq) {
        const auto [w0, w1] = s.cols(oq);
        const int64_t o = plane * plane_out + static_cast<int64_t>(op * q + oq) * B;
        window_max<B>(s, xp, h0, h1, w0, w1, y + o, argmax + o);
      }
    }
  }
}

// dx sums in float (in dx for float, a float plane for bf16, rounded once per cell), each cell's dy added in
// the outputs' order, as maxpool2d.cpp's backward.
template <int B, typename T>
void backward(const Pool2dShape& s, const T* dy, const std::int32_t* argmax, T* dx) {
  const int64_t cells_in = static_cast<int64_t>(s.h) * s.w, cells_out = static_cast<int64_t>(s.p()) * s.q();
  const int64_t planes = static_cast<int64_t>(s.n) * (s.c / B);
  std::atomic<int64_t> bad{-1};  // the first out-of-plane argmax seen, reported after the loop
#pragma omp parallel for if (planes * cells_in * B >= kParallelMinElements) schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    thread_local std::vector<float> scratch;
    float* dxp = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      dxp = dx + plane * cells_in * B;
    } else {
      scratch.resize(static_cast<std::size_t>(cells_in * B));
      dxp = scratch.data();
    }
    std::fill(dxp, dxp + cells_in * B, 0.0f);
    for (int64_t o = plane * cells_out * B; o < (plane + 1) * cells_out * B; o += B) {
      for (int j = 0; j < B; ++j) {
        const std::int32_t i = argmax[o + j];
        if (i < 0 || i >= cells_in) {
          int64_t none = -1;
          bad.compare_exchange_strong(none, o + j);
          continue;
        }
        dxp[i * B + j] += loaded(dy[o + j]);
      }
    }
    if constexpr (!std::is_same_v<T, float>) {
      for (int64_t i = 0; i < cells_in * B; ++i) dx[plane * cells_in * B + i] = stored<T>(dxp[i]);
    }
  }
  const int64_t o = bad.load();
  ENGINE_CHECK(o < 0, "maxpool2d_backward: argmax[{}] = {} is outside the plane of {} cells", o, argmax[o],
               cells_in);
}

}  // namespace

template <typename T>
void maxpool2d_forward_blocked(int block, const Pool2dShape& s, const T* x, T* y, std::int32_t* argmax) {
  s.validate();
  with_channel_block("maxpool2d", block, s.c, [&]<int B>() { forward<B>(s, x, y, argmax); });
}

template <typename T>
void maxpool2d_backward_blocked(int block, const Pool2dShape& s, const T* dy, const std::int32_t* argmax,
                                T* dx) {
  s.validate();
  with_channel_block("maxpool2d", block, s.c, [&]<int B>() { backward<B>(s, dy, argmax, dx); });
}

template void maxpool2d_forward_blocked<float>(int, const Pool2dShape&, const float*, float*, std::int32_t*);
template void maxpool2d_forward_blocked<bfloat16>(int, const Pool2dShape&, const bfloat16*, bfloat16*,
                                                  std::int32_t*);
template void maxpool2d_backward_blocked<float>(int, const Pool2dShape&, const float*, const std::int32_t*,
                                                float*);
template void maxpool2d_backward_blocked<bfloat16>(int, const Pool2dShape&, const bfloat16*,
                                                   const std::int32_t*, bfloat16*);

}  // namespace engine::cpu_fast
