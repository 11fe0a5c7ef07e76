#pragma once
// Conv2d through cuDNN, the semantics of kernels/cpu/conv2d.h (Conv2dShape): cross-correlation, zero
// padding, any stride, groups (cudnnSetConvolutionGroupCount) and dilation, NCHW fp32, weight
// [K, C/groups, R, S], optional bias.
//
// The first call for a shape builds a plan in the handles (tensor/filter/convolution descriptors, the math
// type, and one algorithm per direction chosen per CudaHandlesOptions: heuristic or benchmark, deterministic
// backward algorithms by default); later calls with that shape reuse it. Workspaces come from the caching
// allocator on `stream`, so a steady state makes no cudaMalloc.
//
// Layout NHWC (core/layout.h): x, y, dx and dy are channels last, described to cuDNN as CUDNN_TENSOR_NHWC.
// The weight stays [K, C, R, S] in the caller's memory (the flat parameter buffer, checkpoints); cuDNN's
// NHWC kernels (the tensor-core ones in particular) expect an NHWC filter too, so each call transposes the
// weight into a [K, R, S, C] scratch copy and the filter gradient back out of one (kernels/cuda/transpose.h;
// K*C*R*S elements, small next to the activations). This is what PyTorch's channels_last does: its weights
// are converted to channels_last as well.
//
// Bias: the add after cudnnConvolutionForward and the bias gradient are hand-written kernels (bias.h).
// Backward OVERWRITES dx, dw, db; dx may be nullptr (first layer), db may be nullptr (no bias); dw is
// required.

#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/layout.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

void conv2d_forward_cudnn(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape, const float* x,
                          const float* w, const float* bias, float* y, Layout layout = Layout::NCHW);

void conv2d_backward_cudnn(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape,
                           const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                           Layout layout = Layout::NCHW);

// bf16 autocast on tensor cores (kernels/ops/autocast_bf16.h): x, w (the model's bf16 mirror), y, dy and dx
// are bf16, cuDNN's bf16 configuration (bf16 tensor and filter descriptors, fp32 compute type, tensor-op
// math allowed). The bias is fp32 master data: it is rounded to bf16 and added in fp32 to the bf16 output,
// rounded again (what PyTorch's autocast does on CUDA: cuDNN's bf16 output, then the bias add). dw is
// cuDNN's bf16 dW (bf16 is the only filter type of that configuration) widened exactly into the fp32
// gradient; db is the double-accumulated sum of dy rounded to a bf16 value (autocast's bf16 db, cast up).
// Overwrites y, dx, dw, db; dx and db may be nullptr, bias too.
// Layout as for float32 (NHWC: the bf16 mirror transposed per call into a [K, R, S, C] scratch copy, cuDNN's
// bf16 [K, R, S, C] dW transposed back before it is widened).
void conv2d_forward_cudnn_bf16(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape,
                               const bfloat16* x, const bfloat16* w, const float* bias, bfloat16* y,
                               Layout layout = Layout::NCHW);

void conv2d_backward_cudnn_bf16(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape,
                                const bfloat16* x, const bfloat16* w, const bfloat16* dy, bfloat16* dx,
                                float* dw, float* db, Layout layout = Layout::NCHW);

// The plans in `handles` with the algorithm chosen per direction, one line per shape ("fp32 NCHW x[...]
// w[...] stride s pad p: forward NAME (math) | backward data NAME (math) | backward filter NAME (math)",
// "-" for a direction not run yet, "*" after a transform algorithm, Winograd or FFT): what a failing
// comparison prints so that the run says which algorithms it had.
std::vector<std::string> describe_conv_plans(CudaHandles& handles);

}  // namespace engine::cuda
