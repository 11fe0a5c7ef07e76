#pragma once
// The geometry of the ops, shared by every device (kernels/cpu, kernels/cpu_fast, kernels/cuda, kernels/ops):
// small structs that validate themselves, so every path takes the same arguments. NCHW activations.

#include <cstddef>
#include <cstdint>

namespace engine {

struct BatchNorm2dShape {
  int n = 0, c = 0, h = 0, w = 0;

  std::size_t count() const;   // M = N*H*W, the values per channel
  std::size_t x_size() const;  // N*C*H*W

  // Throws engine::Error unless every size is positive.
  void validate() const;
  // Throws engine::Error for a negative eps (every pass takes one).
  static void validate_eps(double eps);
  // validate() and validate_eps(), and what a training forward needs besides: momentum in [0, 1] and more
  // than one value per channel (a batch variance of one value is 0/0 in PyTorch's unbiased running update).
  void validate_training(double momentum, double eps) const;
};

struct Pool2dShape {
  int n = 0, c = 0, h = 0, w = 0;
  int kernel_h = 0, kernel_w = 0;
  int stride_h = 0, stride_w = 0;
  int pad_h = 0, pad_w = 0;
  // PyTorch's and ONNX's ceil_mode: the output size rounds up, one more window where the last one would
  // overhang the input's end (past the right padding), but never a window that starts in the right padding.
  bool ceil_mode = false;

  int p() const { return extent(h, kernel_h, stride_h, pad_h); }  // output height
  int q() const { return extent(w, kernel_w, stride_w, pad_w); }  // output width
  // The input rows of output row op's window (columns of output column oq's), [begin, end) clipped to the
  // real input: the cells clipped away are padding.
  struct Span {
    int begin, end;
  };
  Span rows(int op) const { return clipped(op, stride_h, pad_h, kernel_h, h); }
  Span cols(int oq) const { return clipped(oq, stride_w, pad_w, kernel_w, w); }
  std::int64_t input_size() const { return static_cast<std::int64_t>(n) * c * h * w; }
  std::int64_t output_size() const { return static_cast<std::int64_t>(n) * c * p() * q(); }
  // Throws engine::Error naming the bad field: non-positive sizes/kernel/stride, negative padding,
  // padding above half the kernel, a kernel larger than the padded input, a plane too big for int32.
  void validate() const;

 private:
  int extent(int in, int kernel, int stride, int pad) const {
    const int span = in + 2 * pad - kernel;
    if (!ceil_mode) return span / stride + 1;
    const int out = (span + stride - 1) / stride + 1;
    return (out - 1) * stride >= in + pad ? out - 1 : out;  // the last window starts inside
  }
  static Span clipped(int o, int stride, int pad, int kernel, int in) {
    const int begin = o * stride - pad, end = begin + kernel;
    return {begin < 0 ? 0 : begin, end > in ? in : end};
  }
};

// Average pooling: the window of Pool2dShape and what a window overlapping the padding divides by: every
// cell of the window (count_include_pad, PyTorch's default) or only its real cells (ONNX's default). The
// padding may reach kernel - 1 (ONNX allows it; PyTorch stops at half the kernel): every window still holds
// a real cell, so no divisor is 0.
struct AvgPool2dShape {
  Pool2dShape window;
  bool count_include_pad = true;

  int p() const { return window.p(); }
  int q() const { return window.q(); }
  std::int64_t input_size() const { return window.input_size(); }
  std::int64_t output_size() const { return window.output_size(); }
  // The divisor of output (op, oq): the cells of its window inside the padded input (kernel_h * kernel_w but
  // for a ceil-mode window overhanging the right padding: ONNX's reference and PyTorch count only the
  // padding's cells), or only its real cells.
  int divisor(int op, int oq) const;
  // Throws engine::Error naming the bad field, as Pool2dShape::validate but with padding below the kernel.
  void validate() const;
};

struct Conv2dShape {
  int n = 0, c = 0, h = 0, w = 0;  // input x[N, C, H, W]
  int k = 0, r = 0, s = 0;         // weight w[K, C / groups, R, S]
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  // PyTorch's and ONNX's groups: output channel k sees input channels [g * C/G, (g+1) * C/G) of its group
  // g = k / (K/G) only (G = C: depthwise). Dilation: the kernel's taps are dilation cells apart (1: dense).
  int groups = 1;
  int dilation_h = 1, dilation_w = 1;

  int c_per_group() const { return c / groups; }
  int k_per_group() const { return k / groups; }
  int span_h() const { return dilation_h * (r - 1) + 1; }  // the input rows one output reads
  int span_w() const { return dilation_w * (s - 1) + 1; }
  int p() const { return (h + 2 * pad_h - span_h()) / stride_h + 1; }  // output height
  int q() const { return (w + 2 * pad_w - span_w()) / stride_w + 1; }  // output width
  bool dense() const { return groups == 1 && dilation_h == 1 && dilation_w == 1; }

  std::size_t x_size() const;  // N*C*H*W
  std::size_t w_size() const;  // K*(C/groups)*R*S
  std::size_t y_size() const;  // N*K*P*Q

  // Throws engine::Error unless every size is positive, strides and dilations are positive, padding is not
  // negative, groups divide C and K, and the (dilated) kernel fits in the padded input.
  void validate() const;
};

struct LinearShape {
  int n = 0;             // rows of x and y
  int in_features = 0;   // columns of x and w
  int out_features = 0;  // rows of w, columns of y

  std::size_t x_size() const;  // N*in
  std::size_t w_size() const;  // out*in
  std::size_t y_size() const;  // N*out

  // Throws engine::Error unless every size is positive.
  void validate() const;
  // Throws engine::Error for a negative eps (every pass takes one).
  static void validate_eps(double eps);
  // validate() and validate_eps(), and what a training forward needs besides: momentum in [0, 1] and more
  // than one value per channel (a batch variance of one value is 0/0 in PyTorch's unbiased running update).
  void validate_training(double momentum, double eps) const;
};

// A per-channel scale and shift, y = x * scale[c] + shift[c], over x seen as [outer, channels, inner]: NCHW
// is (N, C, H*W), NHWC (N*H*W, C, 1), a matrix [N, F] (N, F, 1), one value for every element (1, 1, numel).
struct ChannelAffineShape {
  std::int64_t outer = 0, channels = 0, inner = 0;
  std::int64_t numel() const { return outer * channels * inner; }
  // Throws engine::Error naming the bad size.
  void validate() const;
};

}  // namespace engine
