#include "kernels/ops/binary.h"

#include <array>
#include <initializer_list>

#include "kernels/cpu/binary.h"
#include "kernels/cpu_fast/binary.h"
#include "kernels/cuda/binary.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/nchw_fallback.h"

namespace engine::ops {

namespace {

using Strides = std::array<std::int64_t, kMaxBroadcastRank>;

// t's strides along the logical axes of an output of rank `rank` (t's shape aligned at the last axis), 0
// where t has size 1 (broadcast, or an axis t lacks). A blocked t reaches here only beside operands of its
// own shape and layout (in_memory_order): row-major strides then pair the elements in memory order.
Strides logical_strides(const Tensor& t, int rank) {
  const Shape& s = t.shape();
  Strides st{};
  const int off = rank - static_cast<int>(s.size());
  if (t.ndim() == 4 && t.layout() == Layout::NHWC) {
    const std::int64_t c = s[1], w = s[3];
    const std::int64_t nhwc[4] = {s[2] * w * c, 1, w * c, c};
    for (int i = 0; i < 4; ++i)
      st[static_cast<std::size_t>(off + i)] = s[static_cast<std::size_t>(i)] == 1 ? 0 : nhwc[i];
    return st;
  }
  std::int64_t stride = 1;
  for (int i = static_cast<int>(s.size()) - 1; i >= 0; --i) {
    st[static_cast<std::size_t>(off + i)] = s[static_cast<std::size_t>(i)] == 1 ? 0 : stride;
    stride *= s[static_cast<std::size_t>(i)];
  }
  return st;
}

struct Geometry {
  BroadcastAxes all;  // every axis of y of size > 1, in y's memory order
};

Geometry geometry(const Tensor& a, const Tensor& b, const Tensor& y) {
  const int rank = static_cast<int>(y.ndim());
  const Strides sa = logical_strides(a, rank), sb = logical_strides(b, rank);
  // y's memory order: N, H, W, C for an NHWC y, else its logical order.
  std::array<int, kMaxBroadcastRank> order{};
  for (int i = 0; i < rank; ++i) order[static_cast<std::size_t>(i)] = i;
  if (rank == 4 && y.layout() == Layout::NHWC) order = {0, 2, 3, 1, 4, 5};
  const Strides sy = logical_strides(y, rank);
  Geometry g;
  for (int i = 0; i < rank; ++i) {
    const auto d = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
    if (y.shape()[d] == 1) continue;
    const auto k = static_cast<std::size_t>(g.all.rank++);
    g.all.size[k] = y.shape()[d];
    g.all.out[k] = sy[d];
    g.all.a[k] = sa[d];
    g.all.b[k] = sb[d];
    g.all.numel *= y.shape()[d];
  }
  return g;
}

// The kept and reduced groups for the gradient of `operand`.
BroadcastGrad grad_geometry(const BroadcastAxes& all, int operand) {
  BroadcastGrad g;
  g.operand = operand;
  for (int i = 0; i < all.rank; ++i) {
    const std::int64_t s = operand == 0 ? all.a[i] : all.b[i];
    BroadcastAxes& to = s == 0 ? g.reduced : g.kept;
    const int k = to.rank++;
    to.size[k] = all.size[i];
    to.out[k] = all.out[i];
    to.a[k] = all.a[i];
    to.b[k] = all.b[i];
    to.numel *= all.size[i];
  }
  return g;
}

// A blocked operand (nChw8c/nChw16c, core/layout.h) has no stride per logical axis. Operands of one shape and
// one layout pair their elements in memory order (elementwise, as the residual add); any other mix with a
// blocked tensor (a broadcast [N, C, 1, 1] scale, a [N, 1, H, W] NCHW mask) runs NCHW between reorders.
bool needs_blocked_fallback(std::initializer_list<const Tensor*> tensors) {
  bool blocked = false, uniform = true;
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    blocked = blocked || is_blocked(t->layout());
    if (first == nullptr) first = t;
    uniform = uniform && t->shape() == first->shape() && t->layout() == first->layout();
  }
  return blocked && !uniform;
}

}  // namespace

Shape broadcast_shape(const std::string& who, const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  ENGINE_CHECK(rank <= static_cast<std::size_t>(kMaxBroadcastRank), "{}: operands {} and {}: rank above {}",
               who, shape_str(a), shape_str(b), kMaxBroadcastRank);
  Shape y(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const std::int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    ENGINE_CHECK(da == db || da == 1 || db == 1,
                 "{}: operands {} and {} do not broadcast (axis {} from the end: {} against {})", who,
                 shape_str(a), shape_str(b), rank - i, da, db);
    y[i] = da == 1 ? db : da;
  }
  return y;
}

void binary_forward(const ExecutionContext& ctx, BinaryOp op, const Tensor& a, const Tensor& b,
                    const Tensor& y) {
  if (needs_blocked_fallback({&a, &b, &y})) {
    NchwFallback nchw(ctx);
    binary_forward(ctx, op, nchw.in(a), nchw.in(b), nchw.out(y));
    nchw.finish();
    return;
  }
  same_layout("binary", {{"a", a}, {"b", b}, {"y", y}});
  ENGINE_CHECK(broadcast_shape("binary", a.shape(), b.shape()) == y.shape(), "binary: y {} for a {} and b {}",
               shape_str(y.shape()), shape_str(a.shape()), shape_str(b.shape()));
  if (bf16::on_float32(ctx, {a, b}, {y}, [&](const Tensor* in, const Tensor* out) {
        binary_forward(ctx, op, in[0], in[1], out[0]);
      })) {
    return;
  }
  const Geometry g = geometry(a, b, y);
  dispatch("binary", ctx, y, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::binary_forward(cuda_stream(ctx), op, g.all, a.data<T>(), b.data<T>(), y.data<T>());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::binary_forward(op, g.all, a.data<T>(), b.data<T>(), y.data<T>());
    } else {
      cpu::binary_forward<T>(op, g.all, a.data<T>(), b.data<T>(), y.data<T>());
    }
  });
}

void binary_backward(const ExecutionContext& ctx, BinaryOp op, const Tensor& dy, const Tensor& a,
                     const Tensor& b, const Tensor& da, const Tensor& db) {
  if (needs_blocked_fallback({&dy, &a, &b, &da, &db})) {
    NchwFallback nchw(ctx);
    binary_backward(ctx, op, nchw.in(dy), nchw.in(a), nchw.in(b), nchw.out(da), nchw.out(db));
    nchw.finish();
    return;
  }
  same_layout("binary_backward", {{"dy", dy}, {"a", a}, {"b", b}, {"da", da}, {"db", db}});
  if (bf16::on_float32(ctx, {dy, a, b}, {da, db}, [&](const Tensor* in, const Tensor* out) {
        binary_backward(ctx, op, in[0], in[1], in[2], out[0], out[1]);
      })) {
    return;
  }
  const Geometry g = geometry(a, b, dy);
  for (int operand = 0; operand < 2; ++operand) {
    const Tensor& dx = operand == 0 ? da : db;
    if (!dx.defined()) continue;
    ENGINE_CHECK(dx.shape() == (operand == 0 ? a : b).shape(), "binary_backward: gradient {} for operand {}",
                 shape_str(dx.shape()), shape_str((operand == 0 ? a : b).shape()));
    const BroadcastGrad gg = grad_geometry(g.all, operand);
    dispatch("binary_backward", ctx, dy, [&]<Path P, typename T>() {
      if constexpr (P == Path::Cuda) {
        cuda::binary_backward(cuda_stream(ctx), op, gg, dy.data<T>(), a.data<T>(), b.data<T>(), dx.data<T>());
      } else if constexpr (P == Path::CpuFast) {
        cpu_fast::binary_backward(op, gg, dy.data<T>(), a.data<T>(), b.data<T>(), dx.data<T>());
      } else {
        cpu::binary_backward<T>(op, gg, dy.data<T>(), a.data<T>(), b.data<T>(), dx.data<T>());
      }
    });
  }
}

}  // namespace engine::ops
