#include "kernels/ops/autocast_bf16.h"

#include "core/error.h"
#include "kernels/ops/cast.h"

namespace engine::ops::autocast {

ExecutionContext fp32(const ExecutionContext& ctx) {
  ExecutionContext c = ctx;
  c.autocast_bf16 = false;
  return c;
}

Tensor rounded(const ExecutionContext& ctx, const Tensor& t) {
  if (!t.defined()) return t;
  ENGINE_CHECK(t.dtype() == DType::F32, "bf16 autocast: float32 inputs only, got {}", t.str());
  Tensor r = Tensor::empty(t.shape(), DType::F32, t.device(), ctx.stream, t.layout());
  round_to_bf16_values(ctx, t, r);
  return r;
}

Tensor weight(const char* op, const ExecutionContext& ctx, const Tensor& w, const Tensor& w_bf16) {
  ENGINE_CHECK(w_bf16.defined(),
               "{}: bf16 autocast needs the weight's bf16 mirror (Model::finalize makes it)", op);
  ENGINE_CHECK(w_bf16.dtype() == DType::BF16 && w_bf16.numel() == w.numel() && w_bf16.device() == w.device(),
               "{}: the bf16 mirror {} does not match the weight {}", op, w_bf16.str(), w.str());
  Tensor r = Tensor::empty(w.shape(), DType::F32, w.device(), ctx.stream);
  cast_from_bf16_scaled(ctx, w_bf16, r, 1.0f);
  return r;
}

void round_in_place(const ExecutionContext& ctx, const Tensor& t) {
  if (t.defined()) round_to_bf16_values(ctx, t, t);
}

}  // namespace engine::ops::autocast
