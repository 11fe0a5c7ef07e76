#include "kernels/cpu_fast/maxpool2d.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_fast/bf16_io.h"
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {

namespace {

// T is the storage, float or bfloat16 (bf16_io.h): values compared widened (exact), so a bf16 maximum is
// stored back unchanged.

// One output row of the 2x2, stride 2 window: input rows r0 and r1 (r1 = r0 + w), row = r0's offset in the
// plane. The four cells in the generic loop's scan order with its rule, as selects rather than branches so
// the loop vectorises (the arguments by value and the pointers disjoint, so nothing is reloaded). The first
// cell: > -inf, or NaN (which wins), either way the generic loop's pick; then strict '>' (the first maximum
// wins a tie), and NaN wins.
template <typename T>
void maxpool2x2_row(const T* r0, const T* r1, T* y, std::int32_t* argmax, int q, int row, int w) {
#pragma omp simd
  for (int oq = 0; oq < q; ++oq) {
    const int c = 2 * oq;
    float best = loaded(r0[c]);
    std::int32_t at = row + c;
    const float v1 = loaded(r0[c + 1]), v2 = loaded(r1[c]), v3 = loaded(r1[c + 1]);
    const bool t1 = (v1 > best) | (v1 != v1);
    best = t1 ? v1 : best;
    at = t1 ? row + c + 1 : at;
    const bool t2 = (v2 > best) | (v2 != v2);
    best = t2 ? v2 : best;
    at = t2 ? row + w + c : at;
    const bool t3 = (v3 > best) | (v3 != v3);
    best = t3 ? v3 : best;
    at = t3 ? row + w + c + 1 : at;
    y[oq] = stored<T>(best);
    argmax[oq] = at;
  }
}

// The 2x2, stride 2, unpadded window (every zoo model's pooling): no clipping; the same bits as the generic
// loop.
template <typename T>
void maxpool2x2_forward(const Pool2dShape& s, const T* x, T* y, std::int32_t* argmax) {
  const int p = s.p(), q = s.q(), w = s.w;
  const std::int64_t planes = static_cast<std::int64_t>(s.n) * s.c;
  const std::int64_t plane_in = static_cast<std::int64_t>(s.h) * s.w;
#pragma omp parallel for if (planes * plane_in >= kParallelMinElements) schedule(static)
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * plane_in;
    T* yp = y + plane * p * q;
    std::int32_t* ap = argmax + plane * p * q;
    for (int op = 0; op < p; ++op) {
      const int row = 2 * op * w;
      const std::ptrdiff_t out = static_cast<std::ptrdiff_t>(op) * q;
      maxpool2x2_row(xp + row, xp + row + w, yp + out, ap + out, q, row, w);
    }
  }
}

// The generic loop's window (op, oq), clipped to the real input (the clipped-away cells are padding, -inf,
// never a max), scanned in row-major order: strict '>' (the first maximum wins a tie), NaN wins.
template <typename T>
void window_max(const Pool2dShape& s, const T* xp, int op, int oq, T* y, std::int32_t* argmax) {
  const auto [h0, h1] = s.rows(op);
  const auto [w0, w1] = s.cols(oq);
  float best = -std::numeric_limits<float>::infinity();
  std::int32_t best_index = h0 * s.w + w0;
  for (int ih = h0; ih < h1; ++ih) {
    for (int iw = w0; iw < w1; ++iw) {
      const float v = loaded(xp[ih * s.w + iw]);
      if (v > best || v != v) {
        best = v;
        best_index = ih * s.w + iw;
      }
    }
  }
  *y = stored<T>(best);
  *argmax = best_index;
}

// Output columns [q0, q1) of row op whose windows lie inside the row (no column clipped): the same scan as
// window_max, cell by cell across a chunk of columns at once, as selects rather than branches so the column
// loop vectorises (a mispredicted branch per cell was most of the generic loop's time: squeezenet1_0's 3x3
// stride-2 ceil-mode pools).
template <typename T>
void interior_row(const Pool2dShape& s, const T* xp, int op, int q0, int q1, T* y, std::int32_t* argmax) {
  constexpr int kChunk = 64;
  const auto [h0, h1] = s.rows(op);
  const int sw = s.stride_w;
  for (int c0 = q0; c0 < q1; c0 += kChunk) {
    const int len = std::min(kChunk, q1 - c0);
    const int first = c0 * sw - s.pad_w;  // the chunk's first window's first column
    float best[kChunk];
    std::int32_t at[kChunk];
    for (int j = 0; j < len; ++j) {
      best[j] = -std::numeric_limits<float>::infinity();
      at[j] = h0 * s.w + first + j * sw;
    }
    for (int ih = h0; ih < h1; ++ih) {
      for (int kx = 0; kx < s.kernel_w; ++kx) {
        const std::int32_t cell = ih * s.w + first + kx;  // column j's cell: cell + j * sw
        const T* src = xp + cell;
#pragma omp simd
        for (int j = 0; j < len; ++j) {
          const float v = loaded(src[j * sw]);
          const bool t = (v > best[j]) | (v != v);
          best[j] = t ? v : best[j];
          at[j] = t ? cell + j * sw : at[j];
        }
      }
    }
    for (int j = 0; j < len; ++j) {
      y[c0 + j] = stored<T>(best[j]);
      argmax[c0 + j] = at[j];
    }
  }
}

template <typename T>
void forward(const Pool2dShape& s, const T* x, T* y, std::int32_t* argmax) {
  s.validate();
  // Ceil mode on an odd side adds a clipped last window: the generic loop's business.
  if (s.kernel_h == 2 && s.kernel_w == 2 && s.stride_h == 2 && s.stride_w == 2 && s.pad_h == 0 &&
      s.pad_w == 0 && (!s.ceil_mode || (s.h % 2 == 0 && s.w % 2 == 0))) {
    maxpool2x2_forward(s, x, y, argmax);
    return;
  }
  const int p = s.p(), q = s.q();
  // The columns whose windows are not clipped: oq stride - pad >= 0 and oq stride - pad + kernel <= w.
  const int q0 = std::min(q, (s.pad_w + s.stride_w - 1) / s.stride_w);
  const int span = s.w + s.pad_w - s.kernel_w;  // negative: no window fits (a kernel past the input's end)
  const int q1 = span < 0 ? q0 : std::max(q0, std::min(q, span / s.stride_w + 1));
  const std::int64_t planes = static_cast<std::int64_t>(s.n) * s.c;
  const std::int64_t plane_in = static_cast<std::int64_t>(s.h) * s.w;
#pragma omp parallel for if (planes * plane_in >= kParallelMinElements) schedule(static)
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * plane_in;
    T* yp = y + plane * p * q;
    std::int32_t* ap = argmax + plane * p * q;
    for (int op = 0; op < p; ++op) {
      T* yr = yp + static_cast<std::ptrdiff_t>(op) * q;
      std::int32_t* ar = ap + static_cast<std::ptrdiff_t>(op) * q;
      for (int oq = 0; oq < q0; ++oq) window_max(s, xp, op, oq, yr + oq, ar + oq);
      interior_row(s, xp, op, q0, q1, yr, ar);
      for (int oq = q1; oq < q; ++oq) window_max(s, xp, op, oq, yr + oq, ar + oq);
    }
  }
}

// dx sums in float: in dx itself for float, in a float plane for bf16, rounded once per cell as the float32
// kernel's output rounded to bf16 would be.
template <typename T>
void backward(const Pool2dShape& s, const T* dy, const std::int32_t* argmax, T* dx) {
  s.validate();
  const std::int64_t plane_in = static_cast<std::int64_t>(s.h) * s.w;
  const std::int64_t plane_out = static_cast<std::int64_t>(s.p()) * s.q();
  const std::int64_t planes = static_cast<std::int64_t>(s.n) * s.c;
  std::atomic<std::int64_t> bad{-1};  // the first out-of-plane argmax seen, reported after the loop
#pragma omp parallel for if (planes * plane_in >= kParallelMinElements) schedule(static)
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    thread_local std::vector<float> scratch;
    float* dxp = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      dxp = dx + plane * plane_in;
    } else {
      scratch.resize(static_cast<std::size_t>(plane_in));
      dxp = scratch.data();
    }
    std::fill(dxp, dxp + plane_in, 0.0f);
    for (std::int64_t o = plane * plane_out; o < (plane + 1) * plane_out; ++o) {
      const std::int32_t i = argmax[o];
      if (i < 0 || i >= plane_in) {
        std::int64_t none = -1;
        bad.compare_exchange_strong(none, o);
        continue;
      }
      dxp[i] += loaded(dy[o]);
    }
    if constexpr (!std::is_same_v<T, float>) {
      for (std::int64_t i = 0; i < plane_in; ++i) dx[plane * plane_in + i] = stored<T>(dxp[i]);
    }
  }
  const std::int64_t o = bad.load();
  ENGINE_CHECK(o < 0, "maxpool2d_backward: argmax[{}] = {} is outside the plane of {} cells", o, argmax[o],
               plane_in);
}

}  // namespace

void maxpool2d_forward(const Pool2dShape& s, const float* x, float* y, std::int32_t* argmax) {
  forward(s, x, y, argmax);
}
void maxpool2d_forward(const Pool2dShape& s, const bfloat16* x, bfloat16* y, std::int32_t* argmax) {
  forward(s, x, y, argmax);
}
void maxpool2d_backward(const Pool2dShape& s, const float* dy, const std::int32_t* argmax, float* dx) {
  backward(s, dy, argmax, dx);
}
void maxpool2d_backward(const Pool2dShape& s, const bfloat16* dy, const std::int32_t* argmax, bfloat16* dx) {
  backward(s, dy, argmax, dx);
}

}  // namespace engine::cpu_fast
