#include "kernels/cpu_fast/conv2d_patchify.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_fast/dnnl_runtime.h"
#include "kernels/cpu_fast/gemm.h"

namespace engine::cpu_fast {
namespace {

using i64 = std::int64_t;

// Where element (n, c, h, w) of an [N, C, H, W] activation in `layout` lies: n C H W + chan[c] + (h W + w)
// step, NCHW (chan[c] = c H W, step 1) or blocked by b ((c / b) H W b + c % b, step b). An image's size is
// the same in every layout (the channels fill whole blocks).
struct Addressing {
  std::vector<i64> chan;
  i64 image = 0, step = 1, width = 0;

  Addressing(i64 c, i64 h, i64 w, Layout layout)
      : chan(static_cast<std::size_t>(c)), image(c * h * w), width(w) {
    const i64 b = layout_block(layout);
    ENGINE_CHECK(b == 0 || c % b == 0, "conv2d_patchify: {} channels in {} (whole blocks only)", c,
                 layout_name(layout));
    step = b == 0 ? 1 : b;
    for (i64 ch = 0; ch < c; ++ch)
      chan[static_cast<std::size_t>(ch)] = b == 0 ? ch * h * w : (ch / b) * h * w * b + ch % b;
  }
  i64 at(i64 n, i64 ch, i64 h, i64 w) const {
    return n * image + chan[static_cast<std::size_t>(ch)] + (h * width + w) * step;
  }
};

// Visits every im2col entry: fn(index into X_cols, index into x). Images split between the threads.
template <typename Fn>
void each_patch_entry(const Conv2dShape& g, const Addressing& xa, Fn&& fn) {
  const i64 p = g.p(), q = g.q(), c = g.c, r = g.r, s = g.s, crs = c * r * s;
#pragma omp parallel for schedule(static)
  for (i64 n = 0; n < g.n; ++n)
    for (i64 i = 0; i < p; ++i)
      for (i64 j = 0; j < q; ++j) {
        const i64 row = ((n * p + i) * q + j) * crs;
        for (i64 ch = 0; ch < c; ++ch)
          for (i64 u = 0; u < r; ++u)
            for (i64 v = 0; v < s; ++v) fn(row + (ch * r + u) * s + v, xa.at(n, ch, i * r + u, j * s + v));
      }
}

// Visits every output: fn(index into the rows [N*P*Q, K], index into y).
template <typename Fn>
void each_output(const Conv2dShape& g, const Addressing& ya, Fn&& fn) {
  const i64 p = g.p(), q = g.q(), k = g.k;
#pragma omp parallel for schedule(static)
  for (i64 n = 0; n < g.n; ++n)
    for (i64 i = 0; i < p; ++i)
      for (i64 j = 0; j < q; ++j) {
        const i64 row = ((n * p + i) * q + j) * k;
        for (i64 o = 0; o < k; ++o) fn(row + o, ya.at(n, o, i, j));
      }
}

struct Scratch {
  std::vector<float> cols, rows, dcols;
};

// One call's GEMM operands: x's patches gathered into X_cols [rows, crs] and room for the outputs' rows
// [rows, k] (Y or dY), in this thread's scratch (a step allocates nothing after its first).
struct Operands {
  i64 rows, k, crs;
  Addressing xa, ya;
  Scratch& s;
  float *cols, *out_rows;

  Operands(const Conv2dShape& g, ConvLayouts l, const float* x)
      : rows(static_cast<i64>(g.n) * g.p() * g.q()),
        k(g.k),
        crs(static_cast<i64>(g.c) * g.r * g.s),
        xa(g.c, g.h, g.w, l.x),
        ya(g.k, g.p(), g.q(), l.y),
        s(scratch()) {
    s.cols.resize(static_cast<std::size_t>(rows * crs));
    s.rows.resize(static_cast<std::size_t>(rows * k));
    cols = s.cols.data();
    out_rows = s.rows.data();
    float* c = cols;
    each_patch_entry(g, xa, [c, x](i64 col, i64 at) { c[col] = x[at]; });
  }

 private:
  static Scratch& scratch() {
    thread_local Scratch sc;
    return sc;
  }
};

void check(const Conv2dShape& g, ConvLayouts l, const char* op) {
  g.validate();
  ENGINE_CHECK(patchify(g),
               "{}: not a patch convolution (kernel = stride, no padding, no dilation, one group)", op);
  ENGINE_CHECK((l.x == Layout::NCHW || is_blocked(l.x)) && (l.y == Layout::NCHW || is_blocked(l.y)),
               "{}: x in {}, y in {} (NCHW or blocked)", op, layout_name(l.x), layout_name(l.y));
}

}  // namespace

bool patchify(const Conv2dShape& g) {
  return g.r == g.stride_h && g.s == g.stride_w && g.r * g.s > 1 && g.pad_h == 0 && g.pad_w == 0 &&
         g.groups == 1 && g.dilation_h == 1 && g.dilation_w == 1;
}

bool patchify_gemm(const Conv2dShape& g, ConvLayouts l) {
  return patchify(g) && (l.x == Layout::NCHW || is_blocked(l.x)) && (l.y == Layout::NCHW || is_blocked(l.y));
}

void conv2d_patchify_forward(const Conv2dShape& g, const float* x, const float* w, const float* bias,
                             float* y, ConvLayouts layouts) {
  check(g, layouts, "conv2d_patchify_forward");
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr,
               "conv2d_patchify_forward: x, w and y must not be null");
  const Operands op(g, layouts, x);
  const i64 rows = op.rows, k = op.k, crs = op.crs;
  const float* cols = op.cols;
  float* yr = op.out_rows;
  if (bias != nullptr) {
    for (i64 r = 0; r < rows; ++r) std::copy(bias, bias + k, yr + r * k);
  }
  dnnl_rt::run("conv2d_patchify_forward", [&] {
    sgemm(Trans::No, Trans::Yes, rows, k, crs, 1.0f, cols, crs, w, crs, bias != nullptr ? 1.0f : 0.0f, yr, k);
  });
  each_output(g, op.ya, [&](i64 row, i64 at) { y[at] = yr[row]; });
}

void conv2d_patchify_backward(const Conv2dShape& g, const float* x, const float* w, const float* dy,
                              float* dx, float* dw, float* db, ConvLayouts layouts) {
  check(g, layouts, "conv2d_patchify_backward");
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "conv2d_patchify_backward: x, w, dy and dw must not be null (dx and db may be)");
  const Operands op(g, layouts, x);
  const i64 rows = op.rows, k = op.k, crs = op.crs;
  const float* cols = op.cols;
  float* dyr = op.out_rows;
  Scratch& s = op.s;
  each_output(g, op.ya, [&](i64 row, i64 at) { dyr[row] = dy[at]; });
  dnnl_rt::run("conv2d_patchify_backward", [&] {
    sgemm(Trans::Yes, Trans::No, k, crs, rows, 1.0f, dyr, k, cols, crs, 0.0f, dw, crs);
    if (dx != nullptr) {
      s.dcols.resize(static_cast<std::size_t>(rows * crs));
      sgemm(Trans::No, Trans::No, rows, crs, k, 1.0f, dyr, k, w, crs, 0.0f, s.dcols.data(), crs);
    }
  });
  if (dx != nullptr) {
    if (g.p() * g.r != g.h || g.q() * g.s != g.w)
      std::fill(dx, dx + g.x_size(), 0.0f);  // rows no patch reads
    const float* dcols = s.dcols.data();
    each_patch_entry(g, op.xa, [&](i64 col, i64 at) { dx[at] = dcols[col]; });
  }
  if (db != nullptr) {
    std::vector<double> acc(static_cast<std::size_t>(k), 0.0);
    for (i64 r = 0; r < rows; ++r)
      for (i64 o = 0; o < k; ++o) acc[static_cast<std::size_t>(o)] += static_cast<double>(dyr[r * k + o]);
    for (i64 o = 0; o < k; ++o) db[o] = static_cast<float>(acc[static_cast<std::size_t>(o)]);
  }
}

}  // namespace engine::cpu_fast
