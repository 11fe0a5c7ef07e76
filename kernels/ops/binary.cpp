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
// where t has size 1 (broadcast, or an axis t lacks). Not for a blocked t (blocked_geometry below).
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

// A blocked y (nChw8c/nChw16c, core/layout.h: b channels a block) has no stride per logical axis, but its
// memory runs in the order of the 5-d frame [N, C/b, H, W, b]. An operand blocked like y (a squeeze-excite
// gate [N, C, 1, 1], a [1, C, 1, 1] constant: a block's channels still contiguous) or plain NCHW of rank <= 4
// (a [C, 1, 1] constant, an [N, 1, H, W] mask, a scalar) has strides along that frame, so the broadcast runs
// in y's memory order with no reorder. Any other mix with a blocked tensor runs NCHW between reorders.
bool in_blocked_frame(const Tensor& y, std::initializer_list<const Tensor*> operands) {
  if (!is_blocked(y.layout())) return false;
  for (const Tensor* t : operands) {
    if (t->defined() && t->layout() != y.layout() && !(t->layout() == Layout::NCHW && t->ndim() <= 4))
      return false;
  }
  return true;
}

// t's strides along the frame [N, C/b, H, W, b] (0 where t broadcasts), and the frame's sizes for y.
Strides frame_strides(const Tensor& t, std::int64_t block) {
  Strides f{};
  if (is_blocked(t.layout())) {  // whole blocks: C > 1
    const Shape& s = t.shape();
    f = {s[0] == 1 ? 0 : s[1] * s[2] * s[3], s[2] * s[3] * block, s[2] == 1 ? 0 : s[3] * block,
         s[3] == 1 ? 0 : block, 1};
    return f;
  }
  const Strides l = logical_strides(t, 4);  // channel c = cb * b + ci
  f = {l[0], l[1] * block, l[2], l[3], l[1]};
  return f;
}

Geometry blocked_geometry(const Tensor& a, const Tensor& b, const Tensor& y) {
  const std::int64_t block = layout_block(y.layout());
  const Shape& s = y.shape();
  const std::int64_t size[5] = {s[0], s[1] / block, s[2], s[3], block};
  const Strides sa = frame_strides(a, block), sb = frame_strides(b, block), sy = frame_strides(y, block);
  Geometry g;
  for (std::size_t d = 0; d < 5; ++d) {
    if (size[d] == 1) continue;
    const auto k = static_cast<std::size_t>(g.all.rank++);
    g.all.size[k] = size[d];
    g.all.out[k] = sy[d];
    g.all.a[k] = sa[d];
    g.all.b[k] = sb[d];
    g.all.numel *= size[d];
  }
  return g;
}

// Whether an op on these tensors runs NCHW between reorders: one is blocked and y's frame cannot take them.
bool needs_blocked_fallback(const Tensor& y, std::initializer_list<const Tensor*> operands) {
  bool blocked = is_blocked(y.layout());
  for (const Tensor* t : operands) blocked = blocked || (t->defined() && is_blocked(t->layout()));
  return blocked && !in_blocked_frame(y, operands);
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
  if (needs_blocked_fallback(y, {&a, &b})) {
    NchwFallback nchw(ctx);
    binary_forward(ctx, op, nchw.in(a), nchw.in(b), nchw.out(y));
    nchw.finish();
    return;
  }
  const bool frame = in_blocked_frame(y, {&a, &b});
  if (!frame) same_layout("binary", {{"a", a}, {"b", b}, {"y", y}});
  ENGINE_CHECK(broadcast_shape("binary", a.shape(), b.shape()) == y.shape(), "binary: y {} for a {} and b {}",
               shape_str(y.shape()), shape_str(a.shape()), shape_str(b.shape()));
  if (bf16::on_float32(ctx, {a, b}, {y}, [&](const Tensor* in, const Tensor* out) {
        binary_forward(ctx, op, in[0], in[1], out[0]);
      })) {
    return;
  }
  const Geometry g = frame ? blocked_geometry(a, b, y) : geometry(a, b, y);
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
  if (needs_blocked_fallback(dy, {&a, &b, &da, &db})) {
    NchwFallback nchw(ctx);
    binary_backward(ctx, op, nchw.in(dy), nchw.in(a), nchw.in(b), nchw.out(da), nchw.out(db));
    nchw.finish();
    return;
  }
  const bool frame = in_blocked_frame(dy, {&a, &b, &da, &db});
  if (!frame) same_layout("binary_backward", {{"dy", dy}, {"a", a}, {"b", b}, {"da", da}, {"db", db}});
  ENGINE_CHECK(!frame || ((!da.defined() || da.layout() == a.layout()) &&
                          (!db.defined() || db.layout() == b.layout())),
               "binary_backward: gradients {} and {} not in the layouts of a {} and b {}", da.str(), db.str(),
               a.str(), b.str());
  if (bf16::on_float32(ctx, {dy, a, b}, {da, db}, [&](const Tensor* in, const Tensor* out) {
        binary_backward(ctx, op, in[0], in[1], in[2], out[0], out[1]);
      })) {
    return;
  }
  const Geometry g = frame ? blocked_geometry(a, b, dy) : geometry(a, b, dy);
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
