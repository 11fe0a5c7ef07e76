#include "kernels/cpu_fast/binary.h"

#include <vector>

#include "kernels/cpu_fast/parallel.h"

namespace engine::cpu_fast {
namespace {

// The walk by rows of the innermost axis: one broadcast_offsets (its divisions) per row, then the row's
// elements by their strides; each element's value is binary_element's very formula (the same bits as one
// element at a time; the divisions per element cost 10x the arithmetic on squeeze-excite's [N, C, H, W] x
// [N, C, 1, 1]).
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

}  // namespace

void binary_forward(BinaryOp op, const BroadcastAxes& g, const float* a, const float* b, float* y) {
  const Rows r = rows_of(g);
#pragma omp parallel for if (g.numel >= kParallelMinElements) schedule(static)
  for (std::int64_t row = 0; row < r.count; ++row) {
    std::int64_t o = 0, ia = 0, ib = 0;
    broadcast_offsets(g, row * r.length, &o, &ia, &ib);
    for (std::int64_t j = 0; j < r.length; ++j)
      y[o + j * r.out] = binary_apply<float>(op, a[ia + j * r.a], b[ib + j * r.b]);
  }
}

// Each gradient element sums its terms over the reduced axes in their index order in double (as
// binary_grad_element, the same bits); the reduced axes' offsets are tabulated once instead of divided out
// per term, and the kept axes walked by rows.
void binary_backward(BinaryOp op, const BroadcastGrad& g, const float* dy, const float* a, const float* b,
                     float* dx) {
  const std::int64_t work = g.kept.numel * g.reduced.numel;
  const auto terms = static_cast<std::size_t>(g.reduced.numel);
  std::vector<std::int64_t> ro(terms), ra(terms), rb(terms);
  for (std::size_t t = 0; t < terms; ++t)
    broadcast_offsets(g.reduced, static_cast<std::int64_t>(t), &ro[t], &ra[t], &rb[t]);
  const Rows r = rows_of(g.kept);
#pragma omp parallel for if (work >= kParallelMinElements) schedule(static)
  for (std::int64_t row = 0; row < r.count; ++row) {
    std::int64_t o = 0, ia = 0, ib = 0;
    broadcast_offsets(g.kept, row * r.length, &o, &ia, &ib);
    for (std::int64_t j = 0; j < r.length; ++j) {
      const std::int64_t oj = o + j * r.out, aj = ia + j * r.a, bj = ib + j * r.b;
      double sum = 0.0;
      for (std::size_t t = 0; t < terms; ++t)
        sum += static_cast<double>(
            binary_grad<float>(op, g.operand, dy[oj + ro[t]], a[aj + ra[t]], b[bj + rb[t]]));
      dx[g.operand == 0 ? aj : bj] = static_cast<float>(sum);
    }
  }
}

}  // namespace engine::cpu_fast
