#pragma once
// NHWC and blocked tensors for a kernel that runs NCHW only (the float64 reference, the float32 CPU path, and
// the CUDA ops without an NHWC kernel): the simplest correct way, kept in one place. `in` gives an NCHW copy
// of an NHWC or blocked tensor the op reads; `out` an NCHW stand-in for one it writes, which finish()
// transposes back. Tensors that are NCHW, undefined or not 4-d pass through unchanged. Usage, in an op:
//
//   if (needs_nchw_fallback(x, /*cuda_has_nhwc=*/true)) {
//     NchwFallback nchw(ctx);
//     op(ctx, nchw.in(x), nchw.out(y));   // the same op, now on NCHW tensors
//     nchw.finish();
//     return;
//   }
//
// An output the op writes only in part (copy_into_channels: a channel range of a concatenation) takes
// `in_out`: an NCHW copy of its current values, transposed back by finish() as `out`'s.

#include <utility>
#include <vector>

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

// Whether an op given `t` (its main 4-d operand) runs the NCHW fallback: t is NHWC and t's path has no NHWC
// kernel (only CUDA ones exist, where `cuda_has_nhwc`), or t is in a CPU blocked layout (nChw8c/nChw16c)
// and the op has no kernel for it (`has_blocked`: what the caller's path takes).
inline bool needs_nchw_fallback(const Tensor& t, bool cuda_has_nhwc, bool has_blocked = false) {
  if (!t.defined()) return false;
  if (is_blocked(t.layout())) return !has_blocked;
  return t.layout() == Layout::NHWC && !(t.is_cuda() && cuda_has_nhwc);
}

// Whether a pooling op's input and output pair a blocked tensor with an NCHW one: a map pooled to one pixel,
// which core/layout.h's activation_layout labels NCHW beside a blocked input (or the reverse in backward).
// Such a pair runs NCHW through the fallback (the one-pixel side needs no reorder).
inline bool blocked_beside_nchw(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.layout() != b.layout() &&
         ((is_blocked(a.layout()) && b.layout() == Layout::NCHW) ||
          (is_blocked(b.layout()) && a.layout() == Layout::NCHW));
}

class NchwFallback {
 public:
  explicit NchwFallback(const ExecutionContext& ctx) : ctx_(ctx) {}
  NchwFallback(const NchwFallback&) = delete;
  NchwFallback& operator=(const NchwFallback&) = delete;
  ~NchwFallback() = default;

  Tensor in(const Tensor& t) const;
  Tensor out(const Tensor& t);
  Tensor in_out(const Tensor& t);
  // Transposes every `out` and `in_out` stand-in into its NHWC or blocked tensor.
  void finish();

 private:
  const ExecutionContext& ctx_;
  std::vector<std::pair<Tensor, Tensor>> outputs_;  // (NCHW stand-in, NHWC or blocked destination)
};

}  // namespace engine::ops
