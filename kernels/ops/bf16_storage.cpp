#include "kernels/ops/bf16_storage.h"

#include "kernels/ops/cast.h"

namespace engine::ops::bf16 {

Tensor widened(const ExecutionContext& ctx, const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::BF16) return t;
  Tensor f = Tensor::empty(t.shape(), DType::F32, t.device(), ctx.stream, t.layout());
  cast_from_bf16_scaled(ctx, t, f, 1.0f);
  return f;
}

bool all_cuda_bf16(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (t->defined() && !(t->is_cuda() && t->dtype() == DType::BF16)) return false;
  }
  return true;
}

bool all_cpu_bf16(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (t->defined() && !(!t->is_cuda() && t->dtype() == DType::BF16)) return false;
  }
  return true;
}

void round_into(const ExecutionContext& ctx, const Tensor& f, const Tensor& target) {
  if (target.defined() && target.dtype() == DType::BF16) cast_to_bf16(ctx, f, target);
}

}  // namespace engine::ops::bf16
