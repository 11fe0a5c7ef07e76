#include "kernels/cuda/handles.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

cuda::CudaHandles& cuda_handles(const char* op, const ExecutionContext& ctx) {
  ENGINE_CHECK(ctx.handles != nullptr, "{}: a CUDA model needs ExecutionContext::handles", op);
  return ctx.handles->bind(cuda_stream(ctx));
}

void check_cuda_context(const std::string& who, const ExecutionContext& ctx) {
  ENGINE_CHECK(ctx.handles != nullptr, "{}: a CUDA context needs cuDNN/cuBLAS handles", who);
  ENGINE_CHECK(ctx.handles->device() == ctx.device.index,
               "{}: the handles belong to cuda:{}, the context to {}", who, ctx.handles->device(),
               ctx.device.str());
  ENGINE_CHECK(ctx.handles->allow_tf32() == ctx.allow_tf32,
               "{}: the context says allow_tf32 = {} but its handles were made with {}", who, ctx.allow_tf32,
               ctx.handles->allow_tf32());
  ENGINE_CHECK(ctx.handles->allow_tf32_matmul() == ctx.allow_tf32_matmul,
               "{}: the context says allow_tf32_matmul = {} but its handles were made with {}", who,
               ctx.allow_tf32_matmul, ctx.handles->allow_tf32_matmul());
}

}  // namespace engine::ops
