#pragma once
// bf16 autocast at Conv2d and Linear (ExecutionContext::autocast_bf16, --precision bf16): the arithmetic of
// PyTorch's torch.autocast(dtype=torch.bfloat16) for these two ops.
//   forward   y  = bf16(op(bf16(x), bf16(w)) + bf16(b))   products exact in fp32, accumulated in fp32
//   backward  dy' = bf16(dy);  dx = bf16(op_dx(dy', bf16(w)));  dW = bf16(op_dW(bf16(x), dy'));
//             db = bf16(sum dy')
// autocast casts every floating argument, the bias included, to bf16, and the gradients of those bf16 copies
// are bf16 tensors cast up into the fp32 grads (the flat gradient buffer stays fp32). bf16(w) is never
// rounded here: it is the model's bf16 mirror of the flat parameter buffer (layers/model.h), which the fused
// SGD writes in the same pass as the fp32 master weights.
//
// What runs where:
//   CUDA  bf16 tensor-core GEMMs: cuDNN with bf16 tensor/filter descriptors and an fp32 compute type,
//         cublasGemmEx with CUDA_R_16BF operands and CUBLAS_COMPUTE_32F (kernels/cuda/conv2d_cudnn.h,
//         linear.h); the weight is read straight from the mirror. x, y, dy and dx are BF16 tensors (a
//         float32 x, the model's input, is cast first; a float32 y or dx gets the bf16 result widened). The
//         bias is added to the bf16 output, which rounds twice (as PyTorch on CUDA).
//   CPU   an exact emulation: the float32 kernels (oneDNN) on float32 copies holding bf16 values (a product
//         of two 8-bit significands is exact in fp32), results rounded to bf16 (into BF16 tensors, or in
//         place in float32 ones). The bias is added before the one rounding.
//         Convolutions on an avx512_bf16 host (cpu_fast::native_bf16; NHWC transposed): oneDNN's bf16
//         kernels, bf16 x, w, y, dy, dx, fp32 accumulation, the bf16-rounded bias added in fp32 before the
//         one rounding, dW and db fp32 then rounded: the emulation's arithmetic in another summation order.
//         Linear there likewise: oneDNN's bf16 matmul (cpu_fast::gemm_bf16), fp32 results rounded.
// The two differ only in the fp32 accumulation order and the bias's second rounding on CUDA
// (tests/common/bf16_tolerance.h bounds both).

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops::autocast {

// The context the fp32 kernels run under: `ctx` with autocast off.
ExecutionContext fp32(const ExecutionContext& ctx);
// A new float32 tensor holding bf16(t) (t float32 or bfloat16); an undefined tensor (no bias) stays
// undefined.
Tensor rounded(const ExecutionContext& ctx, const Tensor& t);
// `t` as a BF16 tensor: itself when it is one, else a new BF16 tensor holding bf16(t) (float32 t).
Tensor as_bf16(const ExecutionContext& ctx, const Tensor& t);
// The weight's bf16 mirror, checked. Throws naming `op` when it is missing or not bf16 of w's size and
// device.
const Tensor& mirror(const char* op, const Tensor& w, const Tensor& w_bf16);
// The weight `w` (float32) as its bf16 mirror's values in a new float32 tensor of w's shape (checked as
// `mirror` does).
Tensor weight(const char* op, const ExecutionContext& ctx, const Tensor& w, const Tensor& w_bf16);
// t = bf16(t), in place (float32 t); nothing for an undefined tensor or a BF16 one (already rounded).
void round_in_place(const ExecutionContext& ctx, const Tensor& t);

// An output that autocast rounds to bf16, written by a kernel whose output type is `kernel` (F32 on the
// CPU, BF16 for the CUDA GEMMs) into `target` (F32 or BF16). get() is what the kernel writes: `target`
// itself where the types agree, else a scratch tensor of `kernel`'s type; finish() leaves bf16 values in
// `target` (rounds in place, casts, or widens). Undefined target: get() is undefined, finish() nothing.
class RoundedOutput {
 public:
  RoundedOutput(const ExecutionContext& ctx, const Tensor& target, DType kernel);
  const Tensor& get() const { return written_; }
  void finish() const;

 private:
  const ExecutionContext& ctx_;
  Tensor target_, written_;
};

}  // namespace engine::ops::autocast
