#pragma once
// The geometry of the two-operand elementwise ops with numpy broadcasting (ONNX's Add, Sub, Mul, Div of two
// activations: [N, C, 1, 1] times [N, C, H, W] in squeeze-excite, a scalar), shared by every device, and the
// formula of each op and of its two gradients, written once for the host and CUDA threads.
//
// The output is walked in its memory order; each axis (of the output, in that order) has a size and a
// stride into each operand, 0 where the operand broadcasts along it. A gradient of an operand sums dy times
// the op's partial derivative over the axes it broadcasts along: those axes are the `reduced` group, the
// others the `kept` group, whose strides walk the operand's own memory once.

#include <cstdint>

#include "core/host_device.h"

namespace engine {

enum class BinaryOp { Add, Sub, Mul, Div };

inline constexpr int kMaxBroadcastRank = 6;

// A group of axes: sizes, and the strides of the output, operand a and operand b along each.
struct BroadcastAxes {
  int rank = 0;
  std::int64_t size[kMaxBroadcastRank] = {};
  std::int64_t out[kMaxBroadcastRank] = {};
  std::int64_t a[kMaxBroadcastRank] = {};
  std::int64_t b[kMaxBroadcastRank] = {};
  std::int64_t numel = 1;
};

// The offsets of index i of the group's index space (row-major over its axes) in y, a and b.
ENGINE_HOST_DEVICE void broadcast_offsets(const BroadcastAxes& g, std::int64_t i, std::int64_t* o,
                                          std::int64_t* a, std::int64_t* b) {
  *o = 0;
  *a = 0;
  *b = 0;
  for (int d = g.rank - 1; d >= 0; --d) {
    const std::int64_t q = i % g.size[d];
    i /= g.size[d];
    *o += q * g.out[d];
    *a += q * g.a[d];
    *b += q * g.b[d];
  }
}

// The gradient of one operand: its elements are the `kept` index space, each a sum over `reduced`.
struct BroadcastGrad {
  BroadcastAxes kept, reduced;
  int operand = 0;  // 0: dL/da, 1: dL/db
};

// y = a op b, in T (the float kernels compute in float, the reference in double).
template <typename T>
ENGINE_HOST_DEVICE T binary_apply(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    default: return a / b;
  }
}

// dy * d(a op b)/d(operand): Add dy, dy; Sub dy, -dy; Mul dy*b, dy*a; Div dy/b, -(dy*a)/(b*b).
template <typename T>
ENGINE_HOST_DEVICE T binary_grad(BinaryOp op, int operand, T dy, T a, T b) {
  switch (op) {
    case BinaryOp::Add: return dy;
    case BinaryOp::Sub: return operand == 0 ? dy : -dy;
    case BinaryOp::Mul: return operand == 0 ? dy * b : dy * a;
    default: return operand == 0 ? dy / b : -(dy * a) / (b * b);
  }
}

// y's element i of the walk (its offset in *at): a op b computed in Compute (double for the reference, float
// for the fast CPU and CUDA kernels), rounded to T.
template <typename Compute, typename T>
ENGINE_HOST_DEVICE T binary_element(BinaryOp op, const BroadcastAxes& g, std::int64_t i, const T* a,
                                    const T* b, std::int64_t* at) {
  std::int64_t ia = 0, ib = 0;
  broadcast_offsets(g, i, at, &ia, &ib);
  return static_cast<T>(binary_apply<Compute>(op, static_cast<Compute>(a[ia]), static_cast<Compute>(b[ib])));
}

// The gradient of the operand's element k of the kept index space (its offset in *at): binary_grad in Compute
// over the reduced axes, summed in double in the reduced index order (every device the same order).
template <typename Compute, typename T>
ENGINE_HOST_DEVICE double binary_grad_element(BinaryOp op, const BroadcastGrad& g, std::int64_t k,
                                              const T* dy, const T* a, const T* b, std::int64_t* at) {
  std::int64_t o = 0, ia = 0, ib = 0;
  broadcast_offsets(g.kept, k, &o, &ia, &ib);
  double sum = 0.0;
  for (std::int64_t r = 0; r < g.reduced.numel; ++r) {
    std::int64_t ro = 0, ra = 0, rb = 0;
    broadcast_offsets(g.reduced, r, &ro, &ra, &rb);
    sum += static_cast<double>(binary_grad<Compute>(op, g.operand, static_cast<Compute>(dy[o + ro]),
                                                    static_cast<Compute>(a[ia + ra]),
                                                    static_cast<Compute>(b[ib + rb])));
  }
  *at = g.operand == 0 ? ia : ib;
  return sum;
}

}  // namespace engine
