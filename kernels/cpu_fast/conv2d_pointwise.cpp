#include "kernels/cpu_fast/conv2d_pointwise.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <omp.h>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_fast/dnnl_runtime.h"
#include "kernels/cpu_fast/gemm.h"

namespace engine::cpu_fast {
namespace {

using i64 = std::int64_t;

std::atomic<PointwiseRoute> g_route{PointwiseRoute::Rule};

// Layers of at most this many multiply-adds (N H W C K) run as GEMMs at any map size (pointwise_gemm).
constexpr long kSmallPointwiseMacs = 1L << 24;

// Activations <-> pixel rows (NHWC: [N*H*W, C] row-major) through oneDNN's reorder (its jit transposes),
// one primitive per shape, layout and direction, cached per thread. The activations are NCHW planes or the
// CPU's blocked layout (nChw16c, nChw8c: [N][C/b][H][W][b]); [N, C, P, 1] describes either, as the pixels of
// a map stay in its order.
void relayout(const float* src, float* dst, i64 n, i64 c, i64 p, Layout layout, bool to_rows) {
  using dnnl::memory;
  using Key = std::tuple<i64, i64, i64, Layout, bool>;
  thread_local std::map<Key, std::pair<memory::desc, memory::desc>> descs;
  thread_local std::map<Key, dnnl::reorder> reorders;
  const Key key{n, c, p, layout, to_rows};
  auto it = reorders.find(key);
  if (it == reorders.end()) {
    const memory::dims dims{n, c, p, 1};
    const memory::desc planes(dims, memory::data_type::f32, dnnl_rt::activation_tag(layout)),
        rows(dims, memory::data_type::f32, memory::format_tag::nhwc);
    const auto& [from, to] = descs[key] = to_rows ? std::pair{planes, rows} : std::pair{rows, planes};
    dnnl_rt::check_room_for_kernels("the pointwise convolution's reorder");
    it = reorders
             .emplace(key, dnnl::reorder(dnnl::reorder::primitive_desc(dnnl_rt::cpu_engine(), from,
                                                                       dnnl_rt::cpu_engine(), to)))
             .first;
  }
  const auto& [from, to] = descs.at(key);
  memory src_mem(from, dnnl_rt::cpu_engine(), const_cast<float*>(src)),
      dst_mem(to, dnnl_rt::cpu_engine(), dst);
  it->second.execute(dnnl_rt::cpu_stream(), src_mem, dst_mem);
  dnnl_rt::cpu_stream().wait();
}

// A tensor as pixel rows: itself at 1x1 maps (NCHW is then [N, C], and a blocked layout the same bytes: its
// channels fill whole blocks), else transposed into `scratch`.
const float* as_rows(const float* act, i64 n, i64 c, i64 p, Layout layout, std::vector<float>& scratch) {
  if (p == 1) return act;
  scratch.resize(static_cast<std::size_t>(n * c * p));
  relayout(act, scratch.data(), n, c, p, layout, true);
  return scratch.data();
}

// Where a result in pixel rows goes: the output itself at 1x1 maps, else `scratch`, moved by `finish`.
float* rows_for(float* act, i64 n, i64 c, i64 p, std::vector<float>& scratch) {
  if (p == 1) return act;
  scratch.resize(static_cast<std::size_t>(n * c * p));
  return scratch.data();
}
void finish(const float* rows, float* act, i64 n, i64 c, i64 p, Layout layout) {
  if (p != 1) relayout(rows, act, n, c, p, layout, false);
}

// db[k] = the sum of dy's plane k over the batch, in double (as linear.h's bias gradient).
void bias_grad(const float* dy, i64 n, i64 k, i64 p, float* db) {
#pragma omp parallel for schedule(static)
  for (i64 o = 0; o < k; ++o) {
    double acc = 0.0;
    for (i64 i = 0; i < n; ++i) {
      const float* plane = dy + (i * k + o) * p;
      for (i64 q = 0; q < p; ++q) acc += static_cast<double>(plane[q]);
    }
    db[o] = static_cast<float>(acc);
  }
}

// The same from dy as pixel rows [rows, k]: each column summed in double over the rows in order, the order
// of the planes' loop above (image, then pixel), so the same bits; the threads take blocks of columns.
void bias_grad_rows(const float* dyr, i64 rows, i64 k, float* db) {
  constexpr i64 kCols = 64;
#pragma omp parallel for schedule(static)
  for (i64 o0 = 0; o0 < k; o0 += kCols) {
    const i64 cols = std::min(kCols, k - o0);
    double acc[kCols] = {};
    for (i64 r = 0; r < rows; ++r) {
      const float* row = dyr + r * k + o0;
      for (i64 o = 0; o < cols; ++o) acc[o] += static_cast<double>(row[o]);
    }
    for (i64 o = 0; o < cols; ++o) db[o0 + o] = static_cast<float>(acc[o]);
  }
}

// Scratch buffers, kept per thread so that a step allocates nothing after its first.
struct Scratch {
  std::vector<float> x, y, dy, dx;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Maps of more than 16 pixels: a GEMM per image on its NCHW planes, nothing moved (X_i [C, P], Y_i [K, P]:
// Y_i = W X_i, dX_i = W^T dY_i, dW = the sum over images of dY_i X_i^T). The images are split between the
// OpenMP threads in one region, each GEMM on its calling thread; dW sums each thread's images in its own
// buffer (the first thread's: dw itself), then the buffers in thread order. Measured at one thread
// (conv2d_weights_bench --pointwise, forward + backward with dx and db): 0.65-0.9x the pixel rows' time at
// 6x6 to 16x16 maps (their relayouts cost more than these GEMMs), 1.3-1.7x at 3x3 and 4x4.
constexpr i64 kPlanesAbove = 16;

// Runs body(thread, first, last) on each OpenMP thread, over its contiguous range of the n images; returns
// the team's size. The first exception is rethrown after the region (none may leave it).
template <typename Fn>
i64 per_thread_images(i64 n, Fn&& body) {
  std::exception_ptr error;
  i64 team = 1;
#pragma omp parallel
  {
    const i64 t = omp_get_thread_num(), threads = omp_get_num_threads();
    if (t == 0) team = threads;
    try {
      body(t, n * t / threads, n * (t + 1) / threads);
    } catch (...) {
#pragma omp critical(conv2d_pointwise_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return team;
}

void forward_planes(i64 n, i64 c, i64 k, i64 p, const float* x, const float* w, const float* bias, float* y) {
  per_thread_images(n, [&](i64, i64 first, i64 last) {
    for (i64 i = first; i < last; ++i) {
      float* yi = y + i * k * p;
      if (bias != nullptr) {
        for (i64 o = 0; o < k; ++o) std::fill(yi + o * p, yi + (o + 1) * p, bias[o]);
      }
      sgemm(Trans::No, Trans::No, k, p, c, 1.0f, w, c, x + i * c * p, p, bias != nullptr ? 1.0f : 0.0f, yi,
            p);
    }
  });
}

void backward_planes(i64 n, i64 c, i64 k, i64 p, const float* x, const float* w, const float* dy, float* dx,
                     float* dw) {
  const i64 kc = k * c;
  thread_local std::vector<float> partial;  // threads 1.. 's dW sums, one k x c block each
  partial.resize(static_cast<std::size_t>(std::max(omp_get_max_threads() - 1, 0)) * kc);
  float* parts = partial.data();
  const i64 team = per_thread_images(n, [&](i64 t, i64 first, i64 last) {
    float* acc = t == 0 ? dw : parts + (t - 1) * kc;
    if (first == last) std::fill(acc, acc + kc, 0.0f);
    for (i64 i = first; i < last; ++i) {
      const float* dyi = dy + i * k * p;
      sgemm(Trans::No, Trans::Yes, k, c, p, 1.0f, dyi, p, x + i * c * p, p, i == first ? 0.0f : 1.0f, acc, c);
      if (dx != nullptr) sgemm(Trans::Yes, Trans::No, c, p, k, 1.0f, w, c, dyi, p, 0.0f, dx + i * c * p, p);
    }
  });
  for (i64 t = 1; t < team; ++t) {
    const float* part = parts + (t - 1) * kc;
    for (i64 j = 0; j < kc; ++j) dw[j] += part[j];
  }
}

void check_shape(const Conv2dShape& g, const char* op) {
  g.validate();
  ENGINE_CHECK(pointwise(g), "{}: not a pointwise shape (1x1 kernel, stride 1, no padding, one group)", op);
}

// Both activations NCHW or both in the same blocked layout (what conv2d.h's blocked calls pass a pointwise
// shape: no 3-channel side).
void check_layouts(ConvLayouts l, const char* op) {
  ENGINE_CHECK(l.x == l.y && (l.x == Layout::NCHW || is_blocked(l.x)),
               "{}: x in {} and y in {} (both NCHW, or both the same blocked layout)", op, layout_name(l.x),
               layout_name(l.y));
}

}  // namespace

bool pointwise(const Conv2dShape& g) {
  return g.r == 1 && g.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0 &&
         g.groups == 1 && g.dilation_h == 1 && g.dilation_w == 1;
}

// Measured (benchmarks/RESULTS.md, one thread, the zoo's shapes at batch 64): the GEMM took 0.32x oneDNN's
// time at 1x1 maps and 0.78x at 2x2, but 1.15-1.23x at 4x4 and 8x8, where jit_1x1's blocking works. Small
// layers at any map (squeezenet1_0's squeeze and expand1x1, regnet_x_400mf's 1x1 at 4x4 to 16x16, at most
// 2^24 multiply-adds) also run here: on two threads beside other processes, oneDNN's jit_1x1 took 3-8 ms a
// forward + backward where the GEMMs took 0.4-1.3 ms (conv2d_weights_bench --pointwise; its backward-weights
// stalls whole scheduler slices between its threads), and on one quiet thread the GEMMs are within 0.1-0.3 ms
// of it there.
bool pointwise_gemm(const Conv2dShape& g, ConvLayouts l) {
  const PointwiseRoute r = g_route.load(std::memory_order_relaxed);
  if (!pointwise(g) || r == PointwiseRoute::Never ||
      !(l.x == l.y && (l.x == Layout::NCHW || is_blocked(l.x))))
    return false;
  const long pixels = static_cast<long>(g.h) * g.w;
  if (r == PointwiseRoute::Always || pixels <= 4) return true;
  // Blocked maps above 4 pixels stay on oneDNN's jit_1x1: quiet on two threads, the GEMM and its two
  // reorders lost there (squeezenet1_0/1_1 steps 10-15% slower, benchmarks/RESULTS.md 2026-11-29 12:00).
  return !is_blocked(l.x) && static_cast<long>(g.n) * pixels * g.c * g.k <= kSmallPointwiseMacs;
}

void set_pointwise_route(PointwiseRoute r) { g_route.store(r, std::memory_order_relaxed); }

void conv2d_pointwise_forward(const Conv2dShape& g, const float* x, const float* w, const float* bias,
                              float* y, ConvLayouts layouts) {
  check_shape(g, "conv2d_pointwise_forward");
  check_layouts(layouts, "conv2d_pointwise_forward");
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr,
               "conv2d_pointwise_forward: x, w and y must not be null");
  const i64 n = g.n, c = g.c, k = g.k, p = static_cast<i64>(g.h) * g.w, rows = n * p;
  dnnl_rt::run("conv2d_pointwise_forward", [&] {
    if (p > kPlanesAbove && layouts.x == Layout::NCHW) {
      forward_planes(n, c, k, p, x, w, bias, y);
      return;
    }
    Scratch& s = scratch();
    const float* xr = as_rows(x, n, c, p, layouts.x, s.x);
    float* yr = rows_for(y, n, k, p, s.y);
    if (bias != nullptr) {
      for (i64 r = 0; r < rows; ++r) std::copy(bias, bias + k, yr + r * k);
    }
    sgemm(Trans::No, Trans::Yes, rows, k, c, 1.0f, xr, c, w, c, bias != nullptr ? 1.0f : 0.0f, yr, k);
    finish(yr, y, n, k, p, layouts.y);
  });
}

void conv2d_pointwise_backward(const Conv2dShape& g, const float* x, const float* w, const float* dy,
                               float* dx, float* dw, float* db, ConvLayouts layouts) {
  check_shape(g, "conv2d_pointwise_backward");
  check_layouts(layouts, "conv2d_pointwise_backward");
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "conv2d_pointwise_backward: x, w, dy and dw must not be null (dx and db may be)");
  const i64 n = g.n, c = g.c, k = g.k, p = static_cast<i64>(g.h) * g.w, rows = n * p;
  dnnl_rt::run("conv2d_pointwise_backward", [&] {
    if (p > kPlanesAbove && layouts.y == Layout::NCHW) {
      backward_planes(n, c, k, p, x, w, dy, dx, dw);
      if (db != nullptr) bias_grad(dy, n, k, p, db);
      return;
    }
    Scratch& s = scratch();
    const float* dyr = as_rows(dy, n, k, p, layouts.y, s.dy);
    const float* xr = as_rows(x, n, c, p, layouts.x, s.x);
    sgemm(Trans::Yes, Trans::No, k, c, rows, 1.0f, dyr, k, xr, c, 0.0f, dw, c);
    if (dx != nullptr) {
      float* dxr = rows_for(dx, n, c, p, s.dx);
      sgemm(Trans::No, Trans::No, rows, c, k, 1.0f, dyr, k, w, c, 0.0f, dxr, c);
      finish(dxr, dx, n, c, p, layouts.x);
    }
    if (db != nullptr) bias_grad_rows(dyr, rows, k, db);
  });
}

}  // namespace engine::cpu_fast
