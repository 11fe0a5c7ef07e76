#pragma once
// The memory order of a 4-d tensor. The shape is always the logical [N, C, H, W] (PyTorch's channels_last
// works the same way); the layout says where element (n, c, h, w) lives:
//   NCHW     ((n * C + c) * H + h) * W + w   (row-major in the shape's order: every tensor of another rank)
//   NHWC     ((n * H + h) * W + w) * C + c   (channels innermost: what cuDNN's tensor-core kernels prefer)
//   NCHW8c   (((n * C/8 + c/8) * H + h) * W + w) * 8 + c%8     (oneDNN's nChw8c: the CPU's AVX2 blocks)
//   NCHW16c  (((n * C/16 + c/16) * H + h) * W + w) * 16 + c%16 (oneDNN's nChw16c: AVX-512's)
// The blocked layouts (CPU only) hold whole blocks: a tensor whose C is not a multiple of the block has none
// (activation_layout gives NCHW for it), so a blocked tensor has exactly numel elements, none of padding.

#include <cstdint>
#include <string_view>

namespace engine {

enum class Layout { NCHW, NHWC, NCHW8c, NCHW16c };

constexpr std::string_view layout_name(Layout l) {
  switch (l) {
    case Layout::NHWC: return "NHWC";
    case Layout::NCHW8c: return "nChw8c";
    case Layout::NCHW16c: return "nChw16c";
    default: return "NCHW";
  }
}

// The channels of one block of a blocked layout; 0 for NCHW and NHWC.
constexpr int layout_block(Layout l) { return l == Layout::NCHW8c ? 8 : l == Layout::NCHW16c ? 16 : 0; }
constexpr bool is_blocked(Layout l) { return layout_block(l) != 0; }

// The layout of a 4-d activation with `channels` channels of `pixels` (H * W) each in a model whose
// activations are `model`: a blocked layout only where the channels fill whole blocks (the input image's 3
// channels stay NCHW) and the map has more than one pixel. An [N, C, 1, 1] tensor (a squeeze-excite gate, the
// 1x1 maps of a zoo model's last stage at 32x32) has the same bytes in both orders; labelled NCHW, its 1x1
// convolutions take the engine's pointwise GEMM (kernels/cpu_fast/conv2d_pointwise.h), several times faster
// there than oneDNN's blocked 1x1 kernels on 1-pixel maps (mobilenet_v3_small, benchmarks/RESULTS.md).
constexpr Layout activation_layout(Layout model, std::int64_t channels, std::int64_t pixels) {
  return is_blocked(model) && (channels % layout_block(model) != 0 || pixels == 1) ? Layout::NCHW : model;
}

}  // namespace engine
