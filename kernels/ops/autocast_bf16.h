#pragma once
// bf16 autocast at Conv2d and Linear (ExecutionContext::autocast_bf16, --precision bf16): the arithmetic of
// PyTorch's torch.autocast(dtype=torch.bfloat16) for these two ops, emulated in float32 tensors.
//   forward   y  = bf16(op(bf16(x), bf16(w)) + bf16(b))   products exact in fp32, accumulated in fp32
//   backward  dy' = bf16(dy);  dx = bf16(op_dx(dy', bf16(w)));  dW = bf16(op_dW(bf16(x), dy'));
//             db = bf16(sum dy')
// autocast casts every floating argument, the bias included, to bf16, and the gradients of those bf16 copies
// are bf16 tensors cast up into the fp32 grads. PyTorch 2's torch.autocast("cpu", torch.bfloat16) gives
// exactly this y (conv and linear, checked by hand) and a bf16-valued db equal to bf16(sum dy').
// bf16(w) is not rounded here: it is read from the model's bf16 mirror of the flat parameter buffer
// (layers/model.h), which the fused SGD writes in the same pass as the fp32 master weights.
//
// Every value is a float32 holding a bf16 value, so the fp32 kernels (oneDNN on the CPU, cuDNN/cuBLAS on
// CUDA) compute it: a product of two bf16 values (8-bit significands) is exact in fp32 (and in TF32), so the
// only differences from a true bf16 kernel are the fp32 accumulation order and, with a bias, where it is
// added (cuDNN's bf16 output is rounded before a bias is added). Next step (issue 17): bf16 tensors for
// activations and bf16 cuDNN descriptors / cublasGemmEx (CUDA_R_16BF, CUBLAS_COMPUTE_32F) here, which halve
// memory traffic; the elementwise, BatchNorm and pooling kernels then need bf16 variants.

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops::autocast {

// The context the fp32 kernels run under: `ctx` with autocast off.
ExecutionContext fp32(const ExecutionContext& ctx);
// A new float32 tensor holding bf16(t); an undefined tensor (no bias) stays undefined.
Tensor rounded(const ExecutionContext& ctx, const Tensor& t);
// The weight `w` (float32) as its bf16 mirror's values in a new float32 tensor of w's shape. Throws naming
// `op` when the mirror is missing or not bf16 of w's size.
Tensor weight(const char* op, const ExecutionContext& ctx, const Tensor& w, const Tensor& w_bf16);
// t = bf16(t), in place; nothing for an undefined tensor.
void round_in_place(const ExecutionContext& ctx, const Tensor& t);

}  // namespace engine::ops::autocast
