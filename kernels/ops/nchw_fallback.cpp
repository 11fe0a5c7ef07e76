#include "kernels/ops/nchw_fallback.h"

#include "kernels/ops/transpose.h"

namespace engine::ops {

Tensor NchwFallback::in(const Tensor& t) const { return to_layout(ctx_, t, Layout::NCHW); }

Tensor NchwFallback::out(const Tensor& t) {
  if (!t.defined() || t.layout() == Layout::NCHW) return t;
  Tensor stand_in = Tensor::empty(t.shape(), t.dtype(), t.device(), ctx_.stream, Layout::NCHW);
  outputs_.emplace_back(stand_in, t);
  return stand_in;
}

Tensor NchwFallback::in_out(const Tensor& t) {
  if (!t.defined() || t.layout() == Layout::NCHW) return t;
  Tensor stand_in = to_layout(ctx_, t, Layout::NCHW);
  outputs_.emplace_back(stand_in, t);
  return stand_in;
}

void NchwFallback::finish() {
  for (const auto& [stand_in, destination] : outputs_) transpose_layout(ctx_, stand_in, destination);
  outputs_.clear();
}

}  // namespace engine::ops
