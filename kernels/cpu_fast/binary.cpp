#include "kernels/cpu_fast/binary.h"

#include <omp.h>
#include <vector>

#include "kernels/cpu_fast/map.h"  // ENGINE_CPU_CLONES
#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {
namespace {

// The walk by rows of a group's innermost axis. The other axes advance as an odometer (no division per row;
// one broadcast_offsets per thread for its first row), and the row's elements go by their strides; each
// value is binary_apply's / binary_grad's very formula (the same bits as one element at a time).
struct Rows {
  std::int64_t count = 1, length = 1, out = 0, a = 0, b = 0;  // rows; the innermost axis and its strides
};

Rows rows_of(const BroadcastAxes& g) {
  Rows r;
  if (g.rank == 0) return r;
  const int d = g.rank - 1;
  r.length = g.size[d];
  r.count = r.length > 0 ? g.numel / r.length : 0;
  r.out = g.out[d];
  r.a = g.a[d];
  r.b = g.b[d];
  return r;
}

struct Odometer {
  const BroadcastAxes& g;
  std::int64_t index[kMaxBroadcastRank] = {};
  std::int64_t o = 0, a = 0, b = 0;  // the current row's first offsets

  Odometer(const BroadcastAxes& axes, std::int64_t row, std::int64_t length) : g(axes) {
    broadcast_offsets(g, row * length, &o, &a, &b);
    for (int d = g.rank - 2; d >= 0; --d) {
      index[d] = row % g.size[d];
      row /= g.size[d];
    }
  }
  void next() {
    for (int d = g.rank - 2; d >= 0; --d) {
      o += g.out[d], a += g.a[d], b += g.b[d];
      if (++index[d] < g.size[d]) return;
      index[d] = 0;
      o -= g.size[d] * g.out[d], a -= g.size[d] * g.a[d], b -= g.size[d] * g.b[d];
    }
  }
};

// Rows [*first, *last) of the calling thread of a parallel region. The regions are written in the cloned
// functions themselves: a region (or a lambda) in a helper would run the baseline (SSE2) code.
inline void thread_rows(std::int64_t count, std::int64_t* first, std::int64_t* last) {
  const std::int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
  *first = count * t / n;
  *last = count * (t + 1) / n;
}

// A stride as a template argument where it is 0 or 1 (kRuntime otherwise), so that a row of squeeze-excite's
// [N, C, H, W] x [N, C, 1, 1] is a contiguous vector loop against one broadcast value.
constexpr int kRuntime = 2;
inline int stride_code(std::int64_t s) { return s == 0 ? 0 : s == 1 ? 1 : kRuntime; }
template <int kS>
[[gnu::always_inline]] inline float at(const float* p, std::int64_t j, std::int64_t s) {
  if constexpr (kS == 0) return p[0];
  if constexpr (kS == 1) return p[j];
  return p[j * s];
}

template <BinaryOp kOp, int kA, int kB>
ENGINE_CPU_CLONES void forward_rows(const BroadcastAxes& g, const Rows& r, const float* a, const float* b,
                                    float* y) {
#pragma omp parallel if (g.numel >= kParallelMinElements)
  {
    std::int64_t first = 0, last = 0;
    thread_rows(r.count, &first, &last);
    Odometer at_row(g, first, r.length);
    for (std::int64_t row = first; row < last; ++row, at_row.next()) {
      const float *ar = a + at_row.a, *br = b + at_row.b;
      float* yr = y + at_row.o;
      if (r.out == 1) {
#pragma omp simd
        for (std::int64_t j = 0; j < r.length; ++j)
          yr[j] = binary_apply<float>(kOp, at<kA>(ar, j, r.a), at<kB>(br, j, r.b));
      } else {
        for (std::int64_t j = 0; j < r.length; ++j)
          yr[j * r.out] = binary_apply<float>(kOp, at<kA>(ar, j, r.a), at<kB>(br, j, r.b));
      }
    }
  }
}

template <BinaryOp kOp>
void forward_op(const BroadcastAxes& g, const Rows& r, const float* a, const float* b, float* y) {
  const int ca = stride_code(r.a), cb = stride_code(r.b);
  if (ca == 1 && cb == 1) return forward_rows<kOp, 1, 1>(g, r, a, b, y);
  if (ca == 1 && cb == 0) return forward_rows<kOp, 1, 0>(g, r, a, b, y);
  if (ca == 0 && cb == 1) return forward_rows<kOp, 0, 1>(g, r, a, b, y);
  forward_rows<kOp, kRuntime, kRuntime>(g, r, a, b, y);
}

// A gradient without reduced axes is elementwise: float(double(term)) is the term itself, so the kept rows
// are vector loops as the forward's.
template <BinaryOp kOp, int kO, int kA, int kB>
ENGINE_CPU_CLONES void grad_rows(const BroadcastGrad& g, const Rows& r, const float* dy, const float* a,
                                 const float* b, float* dx) {
  const std::int64_t sd = g.operand == 0 ? r.a : r.b;
#pragma omp parallel if (g.kept.numel >= kParallelMinElements)
  {
    std::int64_t first = 0, last = 0;
    thread_rows(r.count, &first, &last);
    Odometer at_row(g.kept, first, r.length);
    for (std::int64_t row = first; row < last; ++row, at_row.next()) {
      const float *dyr = dy + at_row.o, *ar = a + at_row.a, *br = b + at_row.b;
      float* dxr = dx + (g.operand == 0 ? at_row.a : at_row.b);
      if (sd == 1) {
#pragma omp simd
        for (std::int64_t j = 0; j < r.length; ++j)
          dxr[j] = binary_grad<float>(kOp, g.operand, at<kO>(dyr, j, r.out), at<kA>(ar, j, r.a),
                                      at<kB>(br, j, r.b));
      } else {
        for (std::int64_t j = 0; j < r.length; ++j)
          dxr[j * sd] = binary_grad<float>(kOp, g.operand, at<kO>(dyr, j, r.out), at<kA>(ar, j, r.a),
                                           at<kB>(br, j, r.b));
      }
    }
  }
}

// With reduced axes: each gradient element sums its terms in double, row by row of the reduced group's
// innermost axis (the rows' first offsets tabulated once), into 8 partial sums (lane l takes the row's
// i = l mod 8: vector loops with no horizontal step per element) and the rows' last length mod 8 terms into
// one more; the partial sums of 16 kept elements are folded together, across them in vector lanes (as
// global_avgpool.cpp). Double sums in any order: tests/cpu/graph_ops_test.cpp's bound is the float terms'
// roundings.
constexpr int kLanes = 8, kBlock = 16;

template <BinaryOp kOp, int kO, int kA, int kB>
ENGINE_CPU_CLONES void reduced_grad(const BroadcastGrad& g, const float* dy, const float* a, const float* b,
                                    float* dx) {
  // The reduced axes are those along which the operand's stride is 0, so a stride known 0 names the operand
  // at compile time (a runtime one in the lane loop keeps GCC from vectorising it).
  const int operand = kA == 0 ? 0 : kB == 0 ? 1 : g.operand;
  const Rows k = rows_of(g.kept), rr = rows_of(g.reduced);
  const auto starts = static_cast<std::size_t>(rr.count);
  std::vector<std::int64_t> ro(starts), ra(starts), rb(starts);
  for (std::size_t t = 0; t < starts; ++t)
    broadcast_offsets(g.reduced, static_cast<std::int64_t>(t) * rr.length, &ro[t], &ra[t], &rb[t]);
  const std::int64_t body = rr.length - rr.length % kLanes, sd = g.operand == 0 ? k.a : k.b;
#pragma omp parallel if (g.kept.numel * g.reduced.numel >= kParallelMinElements)
  {
    std::int64_t first = 0, last = 0;
    thread_rows(k.count, &first, &last);
    Odometer at_row(g.kept, first, k.length);
    for (std::int64_t row = first; row < last; ++row, at_row.next()) {
      for (std::int64_t j0 = 0; j0 < k.length; j0 += kBlock) {
        const int count = static_cast<int>(k.length - j0 < kBlock ? k.length - j0 : kBlock);
        double part[kBlock][kLanes], rest[kBlock];
        for (int q = 0; q < count; ++q) {
          const std::int64_t j = j0 + q;
          const std::int64_t oj = at_row.o + j * k.out, aj = at_row.a + j * k.a, bj = at_row.b + j * k.b;
          double lane[kLanes] = {}, r = 0.0;
          for (std::size_t t = 0; t < starts; ++t) {
            const float *dyt = dy + oj + ro[t], *at_ = a + aj + ra[t], *bt = b + bj + rb[t];
            for (std::int64_t i = 0; i < body; i += kLanes) {
              for (int l = 0; l < kLanes; ++l)
                lane[l] += static_cast<double>(binary_grad<float>(kOp, operand, at<kO>(dyt, i + l, rr.out),
                                                                  at<kA>(at_, i + l, rr.a),
                                                                  at<kB>(bt, i + l, rr.b)));
            }
            for (std::int64_t i = body; i < rr.length; ++i)
              r += static_cast<double>(binary_grad<float>(kOp, operand, at<kO>(dyt, i, rr.out),
                                                          at<kA>(at_, i, rr.a), at<kB>(bt, i, rr.b)));
          }
          for (int l = 0; l < kLanes; ++l) part[q][l] = lane[l];
          rest[q] = r;
        }
        float* dxr = dx + (operand == 0 ? at_row.a : at_row.b) + j0 * sd;
        for (int q = 0; q < count; ++q) {
          const double* pq = part[q];
          const double sum =
              (((pq[0] + pq[4]) + (pq[2] + pq[6])) + ((pq[1] + pq[5]) + (pq[3] + pq[7]))) + rest[q];
          dxr[q * sd] = static_cast<float>(sum);
        }
      }
    }
  }
}

// Picks the instantiation for the strides of the innermost axis (of the kept group without a reduction,
// else of the reduced group).
template <BinaryOp kOp>
void backward_op(const BroadcastGrad& g, const float* dy, const float* a, const float* b, float* dx) {
  const bool reduces = g.reduced.numel > 1;
  const Rows r = rows_of(reduces ? g.reduced : g.kept);
  const int co = stride_code(r.out), ca = stride_code(r.a), cb = stride_code(r.b);
  if (!reduces) {
    if (co == 1 && ca == 1 && cb == 1) return grad_rows<kOp, 1, 1, 1>(g, r, dy, a, b, dx);
    if (co == 1 && ca == 1 && cb == 0) return grad_rows<kOp, 1, 1, 0>(g, r, dy, a, b, dx);
    if (co == 1 && ca == 0 && cb == 1) return grad_rows<kOp, 1, 0, 1>(g, r, dy, a, b, dx);
    return grad_rows<kOp, kRuntime, kRuntime, kRuntime>(g, r, dy, a, b, dx);
  }
  if (co == 1 && ca == 1 && cb == 0) return reduced_grad<kOp, 1, 1, 0>(g, dy, a, b, dx);
  if (co == 1 && ca == 0 && cb == 1) return reduced_grad<kOp, 1, 0, 1>(g, dy, a, b, dx);
  reduced_grad<kOp, kRuntime, kRuntime, kRuntime>(g, dy, a, b, dx);
}

}  // namespace

void binary_forward(BinaryOp op, const BroadcastAxes& g, const float* a, const float* b, float* y) {
  const Rows r = rows_of(g);
  switch (op) {
    case BinaryOp::Add: return forward_op<BinaryOp::Add>(g, r, a, b, y);
    case BinaryOp::Sub: return forward_op<BinaryOp::Sub>(g, r, a, b, y);
    case BinaryOp::Mul: return forward_op<BinaryOp::Mul>(g, r, a, b, y);
    default: return forward_op<BinaryOp::Div>(g, r, a, b, y);
  }
}

void binary_backward(BinaryOp op, const BroadcastGrad& g, const float* dy, const float* a, const float* b,
                     float* dx) {
  switch (op) {
    case BinaryOp::Add: return backward_op<BinaryOp::Add>(g, dy, a, b, dx);
    case BinaryOp::Sub: return backward_op<BinaryOp::Sub>(g, dy, a, b, dx);
    case BinaryOp::Mul: return backward_op<BinaryOp::Mul>(g, dy, a, b, dx);
    default: return backward_op<BinaryOp::Div>(g, dy, a, b, dx);
  }
}

}  // namespace engine::cpu_fast
