#pragma once
// The oneDNN primitives of one convolution shape (kernels/cpu_fast/conv2d.cpp runs them): per direction a
// candidate per algorithm the --cpu-conv-algo setting and the shape allow (conv2d_algo.h), each with its
// operands' reorders, built once per shape, layout and setting and kept per thread. Internal to conv2d.cpp.

#include <string>
#include <vector>

#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_choice.h"
#include "kernels/cpu_fast/dnnl_runtime.h"

namespace engine::cpu_fast::conv_plan {

using conv_choice::Choice;
using dnnl_rt::Operand;

// One direction of one shape under one algorithm: the primitive, its operands' reorders (each algorithm has
// its own blocked layouts: Winograd's weights are transformed tiles) and oneDNN's name for what runs.
struct Forward {
  dnnl::convolution_forward prim;
  Operand x, w, y;
  std::string impl;
};
struct BackwardData {
  dnnl::convolution_backward_data prim;
  Operand dy, w, dx;
  std::string impl;
};
struct BackwardWeights {
  dnnl::convolution_backward_weights prim;
  Operand x, dy, dw;
  std::string impl;
};

// The primitives of one convolution shape, built on its first call and reused by every later one: the
// forward, and (on the first backward) the backward-weights and backward-data. Activations and weights are
// described as `any`, so oneDNN picks its blocked layouts (nChw8c on AVX2, nChw16c on AVX-512); the
// reorders to and from the engine's plain NCHW/KCRS tensors are primitives built here, once.
// bf16 plans (conv2d_forward_bf16): x, w, y, dy and dx bf16 (widened for a Winograd candidate: any_descs);
// dw and the bias float32. Shapes whose backward-weights oneDNN runs slowly compute dw as an im2col GEMM
// instead (conv2d_weights_gemm.h).
struct ConvPlan {
  dnnl::memory::desc x_plain, w_plain, y_plain, b_plain, dw_plain;
  dnnl::memory::dims strides, dilates, pad_l, pad_r;
  dnnl::memory::desc x_any, w_any, y_any, dw_any;
  std::vector<dnnl::algorithm> algorithms;  // direct, and Winograd where the setting and the shape allow
  Choice<Forward> fwd;
  Choice<BackwardWeights> bwd_weights;
  bool bwd_weights_bias = false;
  bool weights_gemm = false;  // the last backward's dw ran conv2d_weights_gemm.h (its rule)
  Choice<BackwardData> bwd_data;
};

// The engine's own kernels (conv2d_pointwise.h, conv2d_weights_gemm.h) read NCHW only.
inline bool plain(ConvLayouts l) { return l.x == Layout::NCHW && l.y == Layout::NCHW; }

// The plan of a shape (with a bias or not, bf16 or float32, in these layouts) under the current algorithm
// setting, its forward built on the first call.
ConvPlan& plan_for(const Conv2dShape& g, bool bias, bool bf16, ConvLayouts layouts);
// The plan if a call built it, else nullptr.
const ConvPlan* find_plan(const Conv2dShape& g, bool bias, bool bf16, ConvLayouts layouts);
// Build the backward directions' candidates on their first call (backward-weights again when the bias
// gradient's presence changes).
void prepare_backward_weights(ConvPlan& p, bool with_bias_grad);
void prepare_backward_data(ConvPlan& p);

}  // namespace engine::cpu_fast::conv_plan
