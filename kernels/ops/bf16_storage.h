#pragma once
// bf16 activation storage (bf16 autocast, kernels/ops/autocast_bf16.h): Conv2d and Linear write BF16
// activations and input gradients, and the ops between them (BatchNorm, ReLU, pooling, dropout, residual
// add, the loss) take them. An op with a bf16 kernel on the tensor's device dispatches to it
// (dispatch_with_bf16, kernels/ops/dispatch.h: float arithmetic inside, bf16 loads and stores); every other
// case of a BF16 tensor goes through `on_float32`: the op's float32 kernel on float32 copies (widening is
// exact), its outputs rounded back into their BF16 storage (nearest even). That is the same rounding, at the
// same place, as a bf16 kernel's store, so an op without a bf16 kernel yet on a device is correct, only
// slower. On the CPU, BatchNorm (with its fused ReLU), ReLU, the residual add and max pooling have bf16
// kernels (NativeBf16::CudaAndCpu): the fast float loops reading and writing bf16, with the same float
// arithmetic and the same one rounding per output, so they give the bits `on_float32` gives.

#include <cstddef>
#include <initializer_list>

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops::bf16 {

// Where the op has its own bf16 kernel (dispatch_with_bf16): tensors that are all BF16 on such a device
// (CUDA; or CUDA or the CPU) go to it, and on_float32 leaves them alone.
enum class NativeBf16 { None, Cuda, CudaAndCpu };

// Whether every defined tensor of `ts` is a BF16 tensor on a CUDA device.
bool all_cuda_bf16(std::initializer_list<const Tensor*> ts);
// Whether every defined tensor of `ts` is a BF16 tensor on the CPU.
bool all_cpu_bf16(std::initializer_list<const Tensor*> ts);

// A float32 tensor with t's values: a new one for a BF16 t, else t itself (undefined stays undefined).
Tensor widened(const ExecutionContext& ctx, const Tensor& t);
// target = bf16(f) when target is BF16 (f is then its float32 stand-in); nothing otherwise.
void round_into(const ExecutionContext& ctx, const Tensor& f, const Tensor& target);

// When any of `ins` or `outs` is BF16: runs op(fins, fouts) on their float32 stand-ins (`widened`; outputs
// too, so an op that reads its output, or writes it in place of an input, sees the same values), rounds
// each output back with `round_into`, and returns true. Otherwise (no BF16 tensor, or with NativeBf16::Cuda
// all of them CUDA BF16) does nothing and returns false, and the caller runs its usual dispatch:
//   if (bf16::on_float32(ctx, {x}, {y}, [&](const Tensor* in, const Tensor* out) {
//         relu_forward(ctx, in[0], out[0]);
//       })) {
//     return;
//   }
// (the op is called again on float32 tensors, so it takes its usual path.)
template <std::size_t I, std::size_t O, typename Op>
bool on_float32(const ExecutionContext& ctx, const Tensor (&ins)[I], const Tensor (&outs)[O], Op&& op,
                NativeBf16 native = NativeBf16::None) {
  if (native != NativeBf16::None) {
    bool cuda = true, cpu = native == NativeBf16::CudaAndCpu;
    for (const Tensor& t : ins) {
      cuda = cuda && all_cuda_bf16({&t});
      cpu = cpu && all_cpu_bf16({&t});
    }
    for (const Tensor& t : outs) {
      cuda = cuda && all_cuda_bf16({&t});
      cpu = cpu && all_cpu_bf16({&t});
    }
    if (cuda || cpu) return false;
  }
  bool any = false;
  for (const Tensor& t : ins) any = any || (t.defined() && t.dtype() == DType::BF16);
  for (const Tensor& t : outs) any = any || (t.defined() && t.dtype() == DType::BF16);
  if (!any) return false;
  Tensor fins[I], fouts[O];
  for (std::size_t i = 0; i < I; ++i) fins[i] = widened(ctx, ins[i]);
  for (std::size_t i = 0; i < O; ++i) fouts[i] = widened(ctx, outs[i]);
  op(fins, fouts);
  for (std::size_t i = 0; i < O; ++i) round_into(ctx, fouts[i], outs[i]);
  return true;
}

}  // namespace engine::ops::bf16
