#include "kernels/cpu_fast/conv2d_grouped.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_fast/conv2d_taps.h"
#include "kernels/cpu_fast/map.h"  // ENGINE_CPU_CLONES
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {
namespace {

using Index = std::int64_t;

using conv_taps::Range;
using conv_taps::valid;

// Parallel only where the work is worth a team's wake-up (kernels/cpu_fast/parallel.h).
bool worth_threads(const Conv2dShape& g) {
  return static_cast<Index>(g.y_size()) * g.c_per_group() * g.r * g.s >= kParallelMinElements;
}

// Whether each kernel row (column) reads a row (column) inside the plane for some output pixel: on maps
// smaller than the kernel's reach (a 7x7 depthwise with padding 3 on 2x2: 3 of 7; on 1x1: the centre only)
// the others read only padding, and the loops below skip them (they add nothing).
std::vector<unsigned char> reaches(int taps, int outputs, int stride, int pad, int dilation, int extent) {
  std::vector<unsigned char> ok(static_cast<std::size_t>(taps), 0);
  for (int t = 0; t < taps; ++t)
    for (int o = 0; o < outputs; ++o) {
      const int at = o * stride - pad + t * dilation;
      if (at >= 0 && at < extent) ok[static_cast<std::size_t>(t)] = 1;
    }
  return ok;
}
struct TapLists {
  std::vector<int> rows, cols;  // the kernel rows and columns that read inside the plane, in order
  explicit TapLists(const Conv2dShape& g) {
    const auto r_ok = reaches(g.r, g.p(), g.stride_h, g.pad_h, g.dilation_h, g.h),
               s_ok = reaches(g.s, g.q(), g.stride_w, g.pad_w, g.dilation_w, g.w);
    for (int r = 0; r < g.r; ++r)
      if (r_ok[static_cast<std::size_t>(r)] != 0) rows.push_back(r);
    for (int s = 0; s < g.s; ++s)
      if (s_ok[static_cast<std::size_t>(s)] != 0) cols.push_back(s);
  }
};

// y_plane[p, q] += sum over taps of w[r, s] x_plane[p sh - ph + r dh, q sw - pw + s dw].
ENGINE_CPU_CLONES void accumulate_plane(const Conv2dShape& g, const TapLists& taps, const float* x_plane,
                                        const float* w_taps, float* y_plane) {
  const int P = g.p(), Q = g.q();
  for (int p = 0; p < P; ++p) {
    float* yrow = y_plane + static_cast<Index>(p) * Q;
    for (const int r : taps.rows) {
      const int ih = p * g.stride_h - g.pad_h + r * g.dilation_h;
      if (ih < 0 || ih >= g.h) continue;
      const float* xrow = x_plane + static_cast<Index>(ih) * g.w;
      for (const int s : taps.cols) {
        const int offset = s * g.dilation_w - g.pad_w;
        const Range q = valid(offset, g.stride_w, g.w, Q);
        const float wv = w_taps[r * g.s + s];
        for (int j = q.lo; j < q.hi; ++j) yrow[j] += wv * xrow[j * g.stride_w + offset];
      }
    }
  }
}

// dx_plane[p sh - ph + r dh, q sw - pw + s dw] += w[r, s] dy_plane[p, q], over the taps.
ENGINE_CPU_CLONES void scatter_plane(const Conv2dShape& g, const TapLists& taps, const float* dy_plane,
                                     const float* w_taps, float* dx_plane) {
  const int P = g.p(), Q = g.q();
  for (int p = 0; p < P; ++p) {
    const float* dyrow = dy_plane + static_cast<Index>(p) * Q;
    for (const int r : taps.rows) {
      const int ih = p * g.stride_h - g.pad_h + r * g.dilation_h;
      if (ih < 0 || ih >= g.h) continue;
      float* dxrow = dx_plane + static_cast<Index>(ih) * g.w;
      for (const int s : taps.cols) {
        const int offset = s * g.dilation_w - g.pad_w;
        const Range q = valid(offset, g.stride_w, g.w, Q);
        const float wv = w_taps[r * g.s + s];
        for (int j = q.lo; j < q.hi; ++j) dxrow[j * g.stride_w + offset] += wv * dyrow[j];
      }
    }
  }
}

constexpr int kLanes = 16;      // the float32 partial sums of one tap: one AVX-512 vector
constexpr int kFoldEvery = 16;  // samples whose partials are summed in float32 before they join the double

// lanes[r, s, :] += the products dy_plane[p, q] x_plane[p sh - ph + r dh, q sw - pw + s dw], over p and q.
// At stride 1 the plane is copied into `padded` (its zero border, rows wp = W + 2 pw wide, zeros after) and
// dy into `dy_padded` (rows wp wide, zeros past Q and to a whole number of kLanes): each tap's products are
// then one contiguous run of P wp (the extra ones exact zeros) at offset r dh wp + s dw, summed kLanes wide
// into the tap's lanes (no per-plane horizontal sum: that chain of adds cost more than the products).
// Strided shapes sum row by row into lane 0.
// `used[r S + s]`: whether tap (r, s) reads the plane at all (taps_used); the others' products are all of the
// zero border, so they are skipped (their gradient stays the exact zero the reference gives).
ENGINE_CPU_CLONES void correlate_plane(const Conv2dShape& g, const float* x_plane, const float* dy_plane,
                                       const unsigned char* used, float* padded, float* dy_padded,
                                       float* lanes) {
  const int P = g.p(), Q = g.q(), wp = g.w + 2 * g.pad_w;
  for (int i = 0; i < g.h; ++i)
    std::copy(x_plane + static_cast<Index>(i) * g.w, x_plane + static_cast<Index>(i + 1) * g.w,
              padded + static_cast<Index>(i + g.pad_h) * wp + g.pad_w);
  if (g.stride_h == 1 && g.stride_w == 1) {
    for (int p = 0; p < P; ++p)
      std::copy(dy_plane + static_cast<Index>(p) * Q, dy_plane + static_cast<Index>(p + 1) * Q,
                dy_padded + static_cast<Index>(p) * wp);
    const Index len = (static_cast<Index>(P) * wp + kLanes - 1) / kLanes * kLanes;
    for (int r = 0; r < g.r; ++r)
      for (int s = 0; s < g.s; ++s) {
        if (used[r * g.s + s] == 0) continue;
        const float* xs = padded + static_cast<Index>(r) * g.dilation_h * wp + s * g.dilation_w;
        float* lane = lanes + static_cast<Index>(r * g.s + s) * kLanes;
        for (Index i = 0; i < len; i += kLanes)
#pragma omp simd
          for (int l = 0; l < kLanes; ++l) lane[l] += dy_padded[i + l] * xs[i + l];
      }
    return;
  }
  for (int r = 0; r < g.r; ++r)
    for (int s = 0; s < g.s; ++s) {
      if (used[r * g.s + s] == 0) continue;
      float sum = 0.0f;
      for (int p = 0; p < P; ++p) {
        const float* xrow =
            padded + static_cast<Index>(p * g.stride_h + r * g.dilation_h) * wp + s * g.dilation_w;
        const float* dyrow = dy_plane + static_cast<Index>(p) * Q;
        for (int j = 0; j < Q; ++j) sum += dyrow[j] * xrow[j * g.stride_w];
      }
      lanes[static_cast<Index>(r * g.s + s) * kLanes] += sum;
    }
}

// Per tap (r, s): whether it reads inside the plane (its row and its column do, TapLists).
std::vector<unsigned char> taps_used(const Conv2dShape& g) {
  const TapLists lists(g);
  std::vector<unsigned char> used(static_cast<std::size_t>(g.r) * g.s, 0);
  for (const int r : lists.rows)
    for (const int s : lists.cols) used[static_cast<std::size_t>(r * g.s + s)] = 1;
  return used;
}

// Backward-weights of one group on small planes: per sample, the group's input as columns col[pq, c t] (the
// tap t of channel c read by output pixel pq, 0 in the padding; `reads` holds each (pq, t)'s offset in the
// plane or -1), then for each output channel k of the group lanes[k, :] += dy[k, pq] col[pq, :], one vector
// run over the group's CG x taps weights. Each weight is a float32 sum over up to kFoldEvery samples' pixels
// in order, folded into acc (double) as the plane path folds its lanes.
ENGINE_CPU_CLONES void correlate_group(const Conv2dShape& g, int group, const int* reads, const float* x,
                                       const float* dy, float* col, float* lanes, double* acc) {
  const int CG = g.c_per_group(), KG = g.k_per_group(), taps = g.r * g.s;
  const Index in_plane = static_cast<Index>(g.h) * g.w, out_plane = static_cast<Index>(g.p()) * g.q();
  const Index row = static_cast<Index>(CG) * taps;
  for (Index n = 0; n < g.n; ++n) {
    const float* xg = x + (n * g.c + static_cast<Index>(group) * CG) * in_plane;
    for (Index pq = 0; pq < out_plane; ++pq)
      for (int c = 0; c < CG; ++c)
        for (int t = 0; t < taps; ++t) {
          const int at = reads[pq * taps + t];
          col[pq * row + c * taps + t] = at >= 0 ? xg[c * in_plane + at] : 0.0f;
        }
    const float* dyg = dy + (n * g.k + static_cast<Index>(group) * KG) * out_plane;
    for (int k = 0; k < KG; ++k) {
      float* lane = lanes + k * row;
      for (Index pq = 0; pq < out_plane; ++pq) {
        const float d = dyg[k * out_plane + pq];
        const float* cp = col + pq * row;
#pragma omp simd
        for (Index j = 0; j < row; ++j) lane[j] += d * cp[j];
      }
    }
    if (n % kFoldEvery == kFoldEvery - 1 || n == g.n - 1) {
#pragma omp simd
      for (Index j = 0; j < KG * row; ++j) {
        acc[j] += static_cast<double>(lanes[j]);
        lanes[j] = 0.0f;
      }
    }
  }
}

// db[k]: per sample a float32 sum of dy's plane, summed in double (inlined where it is called: a cloned
// function's dispatch costs more than a 2x2 plane's sum).
inline float plane_sum(const float* dy_plane, Index out_plane) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (Index j = 0; j < out_plane; ++j) sum += dy_plane[j];
  return sum;
}

// Where the column form pays: a plane under kLanes outputs leaves most of the plane path's lanes idle, and
// with several channels a group its column serves KG output channels in runs of CG x taps. Depthwise
// (CG = 1) measured no faster in it (convnext_tiny's 7x7 and efficientnet_b0's 5x5 on 2x2, one thread).
bool small_planes(const Conv2dShape& g) {
  return static_cast<Index>(g.p()) * g.q() < kLanes && g.c_per_group() > 1;
}

void backward_weights_small(const Conv2dShape& g, const float* x, const float* dy, float* dw, float* db) {
  const int CG = g.c_per_group(), KG = g.k_per_group(), taps = g.r * g.s, P = g.p(), Q = g.q();
  const Index out_plane = static_cast<Index>(P) * Q, row = static_cast<Index>(CG) * taps;
  std::vector<int> reads(static_cast<std::size_t>(out_plane * taps));
  for (int p = 0; p < P; ++p)
    for (int q = 0; q < Q; ++q)
      for (int r = 0; r < g.r; ++r)
        for (int s = 0; s < g.s; ++s) {
          const int ih = p * g.stride_h - g.pad_h + r * g.dilation_h,
                    iw = q * g.stride_w - g.pad_w + s * g.dilation_w;
          reads[static_cast<std::size_t>(((p * Q) + q) * taps + r * g.s + s)] =
              ih >= 0 && ih < g.h && iw >= 0 && iw < g.w ? ih * g.w + iw : -1;
        }
  const bool threads = static_cast<Index>(g.y_size()) * CG * taps >= kParallelMinElements;
#pragma omp parallel for if (threads) schedule(static)
  for (int group = 0; group < g.groups; ++group) {
    std::vector<float> col(static_cast<std::size_t>(out_plane * row)),
        lanes(static_cast<std::size_t>(KG * row), 0.0f);
    std::vector<double> acc(lanes.size(), 0.0);
    correlate_group(g, group, reads.data(), x, dy, col.data(), lanes.data(), acc.data());
    float* dwg = dw + static_cast<Index>(group) * KG * row;  // dw[k, c, r, s]: the group's rows in order
    for (std::size_t j = 0; j < acc.size(); ++j) dwg[j] = static_cast<float>(acc[j]);
    if (db == nullptr) continue;
    for (int k = group * KG; k < (group + 1) * KG; ++k) {
      double bias_sum = 0.0;
      for (Index n = 0; n < g.n; ++n)
        bias_sum += static_cast<double>(plane_sum(dy + (n * g.k + k) * out_plane, out_plane));
      db[k] = static_cast<float>(bias_sum);
    }
  }
}

}  // namespace

void grouped_conv2d_forward(const Conv2dShape& g, const float* x, const float* w, const float* bias,
                            float* y) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr,
               "grouped_conv2d_forward: x, w and y must not be null");
  const int CG = g.c_per_group(), KG = g.k_per_group(), taps = g.r * g.s;
  const Index in_plane = static_cast<Index>(g.h) * g.w, out_plane = static_cast<Index>(g.p()) * g.q();
  const Index planes = static_cast<Index>(g.n) * g.k;
  const TapLists lists(g);
#pragma omp parallel for if (worth_threads(g)) schedule(static)
  for (Index i = 0; i < planes; ++i) {
    const Index n = i / g.k;
    const int k = static_cast<int>(i % g.k), first_c = k / KG * CG;
    float* y_plane = y + i * out_plane;
    std::fill(y_plane, y_plane + out_plane, bias != nullptr ? bias[k] : 0.0f);
    for (int c = 0; c < CG; ++c)
      accumulate_plane(g, lists, x + (n * g.c + first_c + c) * in_plane,
                       w + (static_cast<Index>(k) * CG + c) * taps, y_plane);
  }
}

void grouped_conv2d_backward_data(const Conv2dShape& g, const float* w, const float* dy, float* dx) {
  g.validate();
  ENGINE_CHECK(w != nullptr && dy != nullptr && dx != nullptr,
               "grouped_conv2d_backward_data: w, dy and dx must not be null");
  const int CG = g.c_per_group(), KG = g.k_per_group(), taps = g.r * g.s;
  const Index in_plane = static_cast<Index>(g.h) * g.w, out_plane = static_cast<Index>(g.p()) * g.q();
  const Index planes = static_cast<Index>(g.n) * g.c;
  const TapLists lists(g);
#pragma omp parallel for if (worth_threads(g)) schedule(static)
  for (Index i = 0; i < planes; ++i) {
    const Index n = i / g.c;
    const int c = static_cast<int>(i % g.c), first_k = c / CG * KG, c_in_group = c % CG;
    float* dx_plane = dx + i * in_plane;
    std::fill(dx_plane, dx_plane + in_plane, 0.0f);
    for (int k = first_k; k < first_k + KG; ++k)
      scatter_plane(g, lists, dy + (n * g.k + k) * out_plane,
                    w + (static_cast<Index>(k) * CG + c_in_group) * taps, dx_plane);
  }
}

void grouped_conv2d_backward_weights(const Conv2dShape& g, const float* x, const float* dy, float* dw,
                                     float* db) {
  g.validate();
  ENGINE_CHECK(x != nullptr && dy != nullptr && dw != nullptr,
               "grouped_conv2d_backward_weights: x, dy and dw must not be null (db may be)");
  if (small_planes(g)) {
    backward_weights_small(g, x, dy, dw, db);
    return;
  }
  const int CG = g.c_per_group(), KG = g.k_per_group(), taps = g.r * g.s;
  const Index in_plane = static_cast<Index>(g.h) * g.w, out_plane = static_cast<Index>(g.p()) * g.q();
  const Index slices = static_cast<Index>(g.k) * CG;  // dw[k, c, :, :]
  const std::vector<unsigned char> used = taps_used(g);
#pragma omp parallel for if (worth_threads(g)) schedule(static)
  for (Index i = 0; i < slices; ++i) {
    const int k = static_cast<int>(i / CG), c = k / KG * CG + static_cast<int>(i % CG);
    std::vector<double> acc(static_cast<std::size_t>(taps), 0.0);
    // Zero borders written once: each plane's copy fills only the interior. The slack past the last row
    // covers the contiguous dot products' reads beyond it (multiplied by dy_padded's zeros).
    const std::size_t wp = static_cast<std::size_t>(g.w + 2 * g.pad_w);
    std::vector<float> padded(
        static_cast<std::size_t>(g.h + 2 * g.pad_h) * wp + wp + static_cast<std::size_t>(g.span_w() + kLanes),
        0.0f),
        dy_padded(static_cast<std::size_t>(g.p()) * wp + kLanes, 0.0f),
        lanes(static_cast<std::size_t>(taps) * kLanes, 0.0f);
    double bias_sum = 0.0;
    const bool with_bias = db != nullptr && i % CG == 0;
    for (Index n = 0; n < g.n; ++n) {
      const float* dy_plane = dy + (n * g.k + k) * out_plane;
      correlate_plane(g, x + (n * g.c + c) * in_plane, dy_plane, used.data(), padded.data(), dy_padded.data(),
                      lanes.data());
      if (n % kFoldEvery == kFoldEvery - 1 || n == g.n - 1) {
        for (std::size_t t = 0; t < acc.size(); ++t)
          for (int l = 0; l < kLanes && used[t] != 0; ++l) {  // an unused tap's lanes stay zero
            acc[t] += static_cast<double>(lanes[t * kLanes + static_cast<std::size_t>(l)]);
            lanes[t * kLanes + static_cast<std::size_t>(l)] = 0.0f;
          }
      }
      if (with_bias) bias_sum += static_cast<double>(plane_sum(dy_plane, out_plane));
    }
    for (int t = 0; t < taps; ++t) dw[i * taps + t] = static_cast<float>(acc[static_cast<std::size_t>(t)]);
    if (with_bias) db[k] = static_cast<float>(bias_sum);
  }
}

}  // namespace engine::cpu_fast
