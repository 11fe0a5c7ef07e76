#include "kernels/ops/channel_copy.h"

#include "kernels/cpu/copy_rows.h"
#include "kernels/cpu_fast/copy_rows.h"
#include "kernels/cuda/copy_rows.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/nchw_fallback.h"

namespace engine::ops {

namespace {

// A [N, C, ...] tensor as rows: {rows, values per channel in a row (1 in NHWC), channels}. A blocked tensor
// (nChw8c/nChw16c) is rows of whole blocks: {N, H*W*b, C/b}, its "channels" the blocks.
struct Rows {
  std::int64_t rows, inner, channels;
};

Rows rows_of(const Tensor& t) {
  ENGINE_CHECK(t.ndim() >= 2, "channel copy: {} has no channel axis", t.str());
  const Shape& s = t.shape();
  std::int64_t spatial = 1;
  for (std::size_t i = 2; i < s.size(); ++i) spatial *= s[i];
  if (t.ndim() == 4 && t.layout() == Layout::NHWC) return {s[0] * spatial, 1, s[1]};
  if (const std::int64_t b = layout_block(t.layout()); b != 0) return {s[0], spatial * b, s[1] / b};
  return {s[0], spatial, s[1]};
}

// A channel offset in rows_of's units: blocks for a blocked tensor.
std::int64_t row_offset(const Tensor& t, std::int64_t offset) {
  const std::int64_t b = layout_block(t.layout());
  return b != 0 ? offset / b : offset;
}

// Whether a copy between channel range [offset, offset + C of narrow) of `wide` and `narrow` runs NCHW
// between reorders: either is blocked and they are not whole blocks of one blocked layout at a block boundary
// (those copy block rows in place).
bool needs_blocked_fallback(const Tensor& wide, const Tensor& narrow, std::int64_t offset) {
  if (!is_blocked(wide.layout()) && !is_blocked(narrow.layout())) return false;
  return wide.layout() != narrow.layout() || offset % layout_block(wide.layout()) != 0;
}

void check_pair(const char* op, const Tensor& wide, const Tensor& narrow, std::int64_t offset) {
  same_layout(op, {{"wide", wide}, {"narrow", narrow}});
  bool ok = wide.ndim() == narrow.ndim() && wide.ndim() >= 2;
  for (std::size_t i = 0; ok && i < wide.shape().size(); ++i)
    ok = i == 1 || wide.shape()[i] == narrow.shape()[i];
  ENGINE_CHECK(ok && offset >= 0 && offset + narrow.shape()[1] <= wide.shape()[1],
               "{}: channels [{}, {}) of {} against {}", op, offset, offset + narrow.shape()[1], wide.str(),
               narrow.str());
}

void run(const ExecutionContext& ctx, const char* op, const RowCopy& c, const Tensor& src,
         const Tensor& dst) {
  ENGINE_CHECK(src.dtype() == dst.dtype(), "{}: {} into {}", op, src.str(), dst.str());
  dispatch(op, ctx, src, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::copy_rows(cuda_stream(ctx), c, src.data<T>(), dst.data<T>());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::copy_rows(c, src.data<T>(), dst.data<T>());
    } else {
      cpu::copy_rows<T>(c, src.data<T>(), dst.data<T>());
    }
  });
}

}  // namespace

void copy_into_channels(const ExecutionContext& ctx, const Tensor& x, const Tensor& y, std::int64_t offset) {
  if (needs_blocked_fallback(y, x, offset)) {
    NchwFallback nchw(ctx);
    copy_into_channels(ctx, nchw.in(x), nchw.in_out(y), offset);  // y's other channels kept
    nchw.finish();
    return;
  }
  check_pair("copy_into_channels", y, x, offset);
  if (bf16::on_float32(ctx, {x}, {y}, [&](const Tensor* in, const Tensor* out) {
        copy_into_channels(ctx, in[0], out[0], offset);
      })) {
    return;
  }
  const Rows w = rows_of(y), n = rows_of(x);
  run(ctx, "copy_into_channels",
      RowCopy{w.rows, n.channels * n.inner, n.channels * n.inner, 0, w.channels * w.inner,
              row_offset(y, offset) * w.inner},
      x, y);
}

void copy_from_channels(const ExecutionContext& ctx, const Tensor& x, std::int64_t offset, const Tensor& y) {
  if (needs_blocked_fallback(x, y, offset)) {
    NchwFallback nchw(ctx);
    copy_from_channels(ctx, nchw.in(x), offset, nchw.out(y));
    nchw.finish();
    return;
  }
  check_pair("copy_from_channels", x, y, offset);
  if (bf16::on_float32(ctx, {x}, {y}, [&](const Tensor* in, const Tensor* out) {
        copy_from_channels(ctx, in[0], offset, out[0]);
      })) {
    return;
  }
  const Rows w = rows_of(x), n = rows_of(y);
  run(ctx, "copy_from_channels",
      RowCopy{w.rows, n.channels * n.inner, w.channels * w.inner, row_offset(x, offset) * w.inner,
              n.channels * n.inner, 0},
      x, y);
}

void channel_shuffle(const ExecutionContext& ctx, const Tensor& x, std::int64_t groups, const Tensor& y) {
  if (is_blocked(x.layout()) || is_blocked(y.layout())) {  // a shuffle crosses blocks: NCHW between reorders
    NchwFallback nchw(ctx);
    channel_shuffle(ctx, nchw.in(x), groups, nchw.out(y));
    nchw.finish();
    return;
  }
  check_pair("channel_shuffle", x, y, 0);
  ENGINE_CHECK(x.shape() == y.shape(), "channel_shuffle: {} into {}", x.str(), y.str());
  if (bf16::on_float32(ctx, {x}, {y}, [&](const Tensor* in, const Tensor* out) {
        channel_shuffle(ctx, in[0], groups, out[0]);
      })) {
    return;
  }
  const Rows r = rows_of(x);
  dispatch("channel_shuffle", ctx, x, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::channel_shuffle(cuda_stream(ctx), r.rows, r.channels, r.inner, groups, x.data<T>(), y.data<T>());
    } else if constexpr (P == Path::CpuFast) {
      cpu_fast::channel_shuffle(r.rows, r.channels, r.inner, groups, x.data<T>(), y.data<T>());
    } else {
      cpu::channel_shuffle<T>(r.rows, r.channels, r.inner, groups, x.data<T>(), y.data<T>());
    }
  });
}

}  // namespace engine::ops
