#pragma once
// Which oneDNN algorithm the CPU device's 3x3 stride-1 convolutions run (kernels/cpu_fast/conv2d.cpp):
// oneDNN 2.x's direct kernels or its Winograd F(4x4, 3x3) (`jit_wino_4x3`, AVX-512 only; oneDNN 3.2 removed
// it, so PyTorch's bundled oneDNN has none). Process-wide, set once by the program (cnn_train's and
// train_bench's --cpu-conv-algo) before the first convolution.
//
//   direct    every convolution direct (the default: bitwise repeatable runs, as before)
//   winograd  every shape Winograd takes (3x3, stride 1, dilation 1, one group) runs it: forward,
//             backward-data and backward-weights; the others direct. Refused on a host whose oneDNN has none.
//   auto      per shape and per direction, the faster of the two, timed on the shape's first call with its
//             real operands (as cuDNN's benchmark mode) and kept for the process; direct where Winograd
//             does not apply or the host has none. The choice follows the timings, so two runs may differ
//             in rounding (like cuDNN's search): --deterministic keeps direct.
//
// Accuracy: Winograd's float error is larger than direct summation's: the transforms multiply the rounding
// of the sums by their norms (Lavin & Gray 2016; Barabasz et al. 2020). tests/cpu/cpu_fast_conv2d_winograd_
// test.cpp holds oneDNN's F(4x4, 3x3) matrices (interpolation points 0, +-5/8, +-3/2) and checks every
// output against the componentwise bound they give (derived there), forward and both backwards.
//
// bf16 (conv2d_forward_bf16): oneDNN has no bf16 Winograd, so a bf16 shape's Winograd candidate is the
// float32 one on its bf16 operands widened to float32 (exact: a bf16 is the top half of a float32) by the
// input reorders, y and dx rounded once to bf16 (nearest even) by the output reorders, dw and db float32 as
// the direct path's. As accurate as the bf16 direct kernel: both round a float32 result once to bf16 (2^-8
// relative), and before that Winograd's float32 error (the bound above, ~1e-5 relative at these sizes) is
// far below that rounding, as the direct path's summation error is; the test checks each output against
// (1 + 2^-8) (that bound) + 2^-8 |y|. It is a candidate like the float32 one: under auto it runs where the
// timing says it beats the bf16 direct kernel, the widening and rounding reorders included.

#include "kernels/shapes.h"

namespace engine::cpu_fast {

enum class ConvAlgo {
  Direct,
  Winograd,
  Auto,
};

const char* conv_algo_name(ConvAlgo a);

// Sets the process's algorithm. Throws (naming the flag's value) for Winograd on a host without it.
void set_conv_algo(ConvAlgo a);
ConvAlgo conv_algo();

// Whether this host's oneDNN creates Winograd convolutions (asked once: a small shape's forward).
bool winograd_available();
// Whether `g` is a shape Winograd can run (3x3, stride 1, dilation 1, one group); oneDNN may still decline
// one (then it runs direct).
bool winograd_shape(const Conv2dShape& g);

}  // namespace engine::cpu_fast
