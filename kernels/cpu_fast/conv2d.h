#pragma once
// 2-D convolution in float32 on the host, fast: oneDNN's convolution primitives (forward, backward-data,
// backward-weights). The CPU device's float32 path; kernels/cpu/conv2d.h (float64 accumulation, plain loops)
// stays the oracle it is tested against, and the float64 path the model gradient checks run.
//
// Same geometry (groups and dilation included), layouts and contract as cpu::conv2d_forward / backward
// (gradients are overwritten, dx and db may be null). The primitives of each shape are built on its first
// call and cached per thread (with their blocked buffers and the reorders between the engine's NCHW/KCRS
// tensors and the layouts oneDNN prefers, nChw8c on AVX2), so a training step only executes them. Which
// algorithm (direct or Winograd) runs each direction of a 3x3 stride-1 shape: kernels/cpu_fast/conv2d_algo.h.
// The sums are float32 in oneDNN's blocked order instead of the reference's float64 in loop order, so results
// differ from the reference by float rounding: about 1e-6 relative per output for these sizes.
// Grouped directions for which oneDNN offers only its gemm fallback run the engine's direct loops instead
// (kernels/cpu_fast/conv2d_grouped.h; conv2d_impl says "engine:grouped_direct").

#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/layout.h"
#include "kernels/cpu/conv2d.h"

namespace engine::cpu_fast {

// The layouts of a call's activations: x (and dx) in `x`, y (and dy) in `y`; NCHW, or a blocked layout
// (core/layout.h: nChw8c, nChw16c), which the primitives then read and write in place when it is the one
// their kernels want (nChw16c on AVX-512, nChw8c on AVX2: no reorder), else through a reorder as NCHW is.
struct ConvLayouts {
  Layout x = Layout::NCHW, y = Layout::NCHW;
};

// What one convolution layer keeps between its forward and its backward (layers/conv2d.h holds one per layer,
// through kernels/ops/conv2d.h): the forward's input converted into the primitive's blocked layout, which
// backward-weights then reads instead of converting x a second time (when it wants the same layout; the
// primitives themselves are shared by the layers of a shape, so this cannot live in them). Contract: a
// backward given a ConvSaved is given the shape and the x, unchanged, of the last forward given it; the
// backward uses it up. Null: nothing kept.
class ConvSaved {
 public:
  struct Impl;
  ConvSaved();
  ~ConvSaved();
  ConvSaved(const ConvSaved&) = delete;
  ConvSaved& operator=(const ConvSaved&) = delete;
  Impl& impl() { return *impl_; }
  // How many backwards read the kept input instead of converting x again (the tests, the benchmarks).
  long reuses() const;

 private:
  std::unique_ptr<Impl> impl_;
};

void conv2d_forward(const Conv2dShape& shape, const float* x, const float* w, const float* bias, float* y,
                    ConvSaved* saved = nullptr, ConvLayouts layouts = {});

void conv2d_backward(const Conv2dShape& shape, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, ConvSaved* saved = nullptr, ConvLayouts layouts = {});

// What oneDNN runs for one direction ("fwd", "bwd_data", "bwd_weights") of a shape this thread has run, under
// the current algorithm setting: its implementation name ("jit:avx512_core", "jit_wino_4x3:avx512_core"), or
// "" before that direction's first call. For the tests and the benchmarks.
std::string conv2d_impl(const Conv2dShape& shape, bool bias, const char* direction, bool bf16 = false,
                        ConvLayouts layouts = {});

// Native bf16 (bf16 autocast, kernels/ops/autocast_bf16.h): x, w, y, dy and dx bf16, products accumulated in
// float32 by oneDNN's bf16 kernels (vdpbf16ps), the bias added in float32 before the output's one rounding
// (nearest even); dw and db float32 sums of the bf16 products. oneDNN has no bf16 Winograd: a 3x3 stride-1
// shape's Winograd candidate is the float32 one on the operands widened (conv2d_algo.h).
// native_bf16(): whether the host runs them natively (avx512_bf16: oneDNN's avx512_core_bf16 or wider);
// elsewhere oneDNN would emulate them slowly, and kernels/ops keeps the float32 emulation.
bool native_bf16();
void conv2d_forward_bf16(const Conv2dShape& shape, const bfloat16* x, const bfloat16* w, const float* bias,
                         bfloat16* y, ConvSaved* saved = nullptr, ConvLayouts layouts = {});
void conv2d_backward_bf16(const Conv2dShape& shape, const bfloat16* x, const bfloat16* w, const bfloat16* dy,
                          bfloat16* dx, float* dw, float* db, ConvSaved* saved = nullptr,
                          ConvLayouts layouts = {});
// Where oneDNN's bf16 backward-weights is slow, dw is an im2col GEMM instead (conv2d_weights_gemm.h), reading
// x and dy in either layout; float32 pointwise convolutions on maps of at most 4 pixels (or small ones) are
// GEMMs over the pixels (conv2d_pointwise.h), NCHW or blocked (x and y in the same layout).

}  // namespace engine::cpu_fast
