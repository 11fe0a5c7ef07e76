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
  Tensor r = Tensor::empty(t.shape(), DType::F32, t.device(), ctx.stream, t.layout());
  if (t.dtype() == DType::BF16) {
    cast_from_bf16_scaled(ctx, t, r, 1.0f);  // exact: already bf16 values
    return r;
  }
  ENGINE_CHECK(t.dtype() == DType::F32, "bf16 autocast: float32 or bfloat16 inputs only, got {}", t.str());
  round_to_bf16_values(ctx, t, r);
  return r;
}

Tensor as_bf16(const ExecutionContext& ctx, const Tensor& t) {
  if (!t.defined() || t.dtype() == DType::BF16) return t;
  ENGINE_CHECK(t.dtype() == DType::F32, "bf16 autocast: float32 or bfloat16 inputs only, got {}", t.str());
  Tensor r = Tensor::empty(t.shape(), DType::BF16, t.device(), ctx.stream, t.layout());
  cast_to_bf16(ctx, t, r);
  return r;
}

const Tensor& mirror(const char* op, const Tensor& w, const Tensor& w_bf16) {
  ENGINE_CHECK(w_bf16.defined(),
               "{}: bf16 autocast needs the weight's bf16 mirror (Model::finalize makes it)", op);
  ENGINE_CHECK(w_bf16.dtype() == DType::BF16 && w_bf16.numel() == w.numel() && w_bf16.device() == w.device(),
               "{}: the bf16 mirror {} does not match the weight {}", op, w_bf16.str(), w.str());
  return w_bf16;
}

Tensor weight(const char* op, const ExecutionContext& ctx, const Tensor& w, const Tensor& w_bf16) {
  Tensor r = Tensor::empty(w.shape(), DType::F32, w.device(), ctx.stream);
  cast_from_bf16_scaled(ctx, mirror(op, w, w_bf16), r, 1.0f);
  return r;
}

void round_in_place(const ExecutionContext& ctx, const Tensor& t) {
  if (t.defined() && t.dtype() == DType::F32) round_to_bf16_values(ctx, t, t);
}

RoundedOutput::RoundedOutput(const ExecutionContext& ctx, const Tensor& target, DType kernel)
    : ctx_(ctx), target_(target) {
  if (!target.defined()) return;
  ENGINE_CHECK(target.dtype() == DType::F32 || target.dtype() == DType::BF16,
               "bf16 autocast: outputs are float32 or bfloat16, got {}", target.str());
  written_ = target.dtype() == kernel
                 ? target
                 : Tensor::empty(target.shape(), kernel, target.device(), ctx.stream, target.layout());
}

void RoundedOutput::finish() const {
  if (!target_.defined()) return;
  if (written_.dtype() == DType::BF16) {
    // bf16 results: already rounded; widened (exactly) when the target is float32.
    if (target_.dtype() == DType::F32) cast_from_bf16_scaled(ctx_, written_, target_, 1.0f);
    return;
  }
  // fp32 results: rounded in place, or rounded into the BF16 target.
  if (target_.dtype() == DType::F32) {
    round_to_bf16_values(ctx_, target_, target_);
  } else {
    cast_to_bf16(ctx_, written_, target_);
  }
}

}  // namespace engine::ops::autocast
