// The ops a model in a CPU blocked layout runs (core/layout.h: nChw16c, nChw8c) with blocked tensors,
// against the float64 NCHW reference, on the cases of tests/common/layout_op_cases.h (odd N, H, W, outputs
// poisoned) with channels that fill 1 to 3 blocks. Per op and block:
//  - float64 blocked equals float64 NCHW bitwise: the reference has no blocked kernels, so it runs NCHW
//    between exact reorders (kernels/ops/nchw_fallback.h);
//  - float32 blocked (the fast kernels reading and writing the blocked layout: oneDNN's convolutions in
//  place,
//    cpu_fast/batchnorm2d_blocked.h, cpu_fast/maxpool2d_blocked.h, the elementwise ops in memory order)
//    within float32's error of the reference, the tolerances of nhwc_ops_test.cpp (the same arithmetic);
//  - max pooling and the elementwise ops blocked equal their float32 NCHW run bitwise (same scan and
//    summation order).
// Plus: the reorder's element placement, and the ops that address NCHW/NHWC by strides (binary broadcasts,
// channel copies, affine and LayerNorm) giving an NCHW run's bits on blocked tensors.

#include <functional>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "kernels/ops/binary.h"
#include "kernels/ops/channel_affine.h"
#include "kernels/ops/channel_copy.h"
#include "kernels/ops/channel_layernorm.h"
#include "tests/common/error_of.h"
#include "tests/common/layout_op_cases.h"

namespace engine::testing::layout_cases {
namespace {

Env cpu(DType dtype, Layout layout, std::int64_t channels) {
  Env e{ExecutionContext{}, layout, channels};
  e.ctx.dtype = dtype;
  return e;
}

struct Blocking {
  Layout layout;
  std::int64_t channels;
};
// One block of 16; three of 8 (an odd count of blocks).
constexpr Blocking kBlockings[] = {{Layout::NCHW16c, 16}, {Layout::NCHW16c, 48}, {Layout::NCHW8c, 24}};

std::string name_of(const Blocking& b) {
  return std::string(layout_name(b.layout)) + " C=" + std::to_string(b.channels);
}

template <typename Case>
void check(const Case& run, double tol, const std::string& what, bool bitwise_f32 = false) {
  for (const Blocking& b : kBlockings) {
    const std::string label = what + " " + name_of(b);
    const Outputs reference = run(cpu(DType::F64, Layout::NCHW, b.channels));
    const Outputs blocked64 = run(cpu(DType::F64, b.layout, b.channels));
    ASSERT_EQ(blocked64.size(), reference.size());
    for (std::size_t k = 0; k < reference.size(); ++k)
      EXPECT_EQ(blocked64[k].second, reference[k].second) << label << " float64 " << reference[k].first;
    const Outputs blocked32 = run(cpu(DType::F32, b.layout, b.channels));
    expect_close(blocked32, reference, tol, label + " float32");
    if (!bitwise_f32) continue;
    const Outputs nchw32 = run(cpu(DType::F32, Layout::NCHW, b.channels));
    for (std::size_t k = 0; k < nchw32.size(); ++k)
      EXPECT_EQ(blocked32[k].second, nchw32[k].second) << label << " float32 vs NCHW " << nchw32[k].first;
  }
}

TEST(BlockedLayout, ReorderPlacesEachElementAtItsBlockedOffset) {
  const Env e = cpu(DType::F32, Layout::NCHW, 24);
  const Shape shape{3, 24, 5, 3};
  const Tensor x = input(e, shape, 7);  // NCHW
  for (const Layout l : {Layout::NCHW8c, Layout::NCHW16c}) {
    if (shape[1] % layout_block(l) != 0) continue;
    const Tensor b = ops::to_layout(e.ctx, x, l);
    const std::int64_t B = layout_block(l), C = shape[1], H = shape[2], W = shape[3];
    for (std::int64_t n = 0; n < shape[0]; ++n)
      for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t i = 0; i < H * W; ++i)
          ASSERT_EQ(b.data<float>()[((n * (C / B) + c / B) * H * W + i) * B + c % B],
                    x.data<float>()[(n * C + c) * H * W + i])
              << layout_name(l) << " n " << n << " c " << c << " cell " << i;
    EXPECT_EQ(values(e, ops::to_layout(e.ctx, b, Layout::NHWC)), values(e, x)) << "through NHWC";
  }
  EXPECT_NE(error_of([&] {
              (void)Tensor::empty({2, 12, 3, 3}, DType::F32, Device::cpu(), nullptr, Layout::NCHW8c);
            }).find("holds whole blocks of 8 channels"),
            std::string::npos);
}

// Conv through oneDNN, x and y each NCHW or blocked (the first layer's x[.., 3, ..] stays NCHW): sums of at
// most L = 288 products (C*R*S = 144 forward; K*R*S = 32*9 for dx; N*P*Q = 105 for dw) of values of magnitude
// <= 1 accumulated in float32: |error| <= L * 2^-23 * sum |terms| <= 288^2 * 2^-23 = 9.9e-3, within the
// 1e-2 * max(1, largest output) the check allows; a layout mistake moves values by O(1).
TEST(BlockedLayout, Conv2dAgainstTheFloat64Reference) {
  const auto conv = [](std::int64_t c, std::int64_t k, int stride) {
    return [=](const Env& e) {
      return conv2d_of(e, {.n = 3,
                           .c = static_cast<int>(c),
                           .h = 7,
                           .w = 5,
                           .k = static_cast<int>(k),
                           .r = 3,
                           .s = 3,
                           .stride_h = stride,
                           .stride_w = stride,
                           .pad_h = 1,
                           .pad_w = 1});
    };
  };
  for (const Layout l : {Layout::NCHW16c, Layout::NCHW8c}) {
    const std::string label = std::string("conv2d ") + std::string(layout_name(l));
    for (const auto& [c, k, stride] : {std::tuple{16, 16, 1}, {3, 16, 1}, {16, 32, 2}, {16, 5, 1}}) {
      const auto run = conv(c, k, stride);
      const Outputs reference = run(cpu(DType::F64, Layout::NCHW, 5));
      const std::string what = label + " " + std::to_string(c) + "->" + std::to_string(k);
      EXPECT_EQ(run(cpu(DType::F64, l, 5)), reference) << what << " float64";
      expect_close(run(cpu(DType::F32, l, 5)), reference, 1e-2, what + " float32");
    }
  }
}

// Convolutions to and from one-pixel maps (NCHW in a blocked model, core/layout.h; described to oneDNN as the
// blocked layout whose bytes they hold): 2x2 -> 1x1 (3x3, stride 2) and 1x1 -> 3x3 (1x1, padding 1). The
// argument and tolerance of the test above (at most 144 products a sum here).
TEST(BlockedLayout, Conv2dToAndFromOnePixel) {
  const Conv2dShape down{.n = 3,
                         .c = 16,
                         .h = 2,
                         .w = 2,
                         .k = 32,
                         .r = 3,
                         .s = 3,
                         .stride_h = 2,
                         .stride_w = 2,
                         .pad_h = 1,
                         .pad_w = 1};
  const Conv2dShape up{.n = 3, .c = 16, .h = 1, .w = 1, .k = 16, .r = 1, .s = 1, .pad_h = 1, .pad_w = 1};
  for (const Conv2dShape& s : {down, up}) {
    const auto run = [&](const Env& e) { return conv2d_of(e, s); };
    const Outputs reference = run(cpu(DType::F64, Layout::NCHW, 5));
    for (const Layout l : {Layout::NCHW16c, Layout::NCHW8c}) {
      const std::string what =
          std::string(layout_name(l)) + " " + std::to_string(s.h) + "x" + std::to_string(s.w);
      EXPECT_EQ(run(cpu(DType::F64, l, 5)), reference) << what << " float64";
      expect_close(run(cpu(DType::F32, l, 5)), reference, 1e-2, what + " float32");
    }
  }
}

// BatchNorm: the blocked kernels do the NCHW kernels' arithmetic (double sums, one rounding per output):
// nhwc_ops_test.cpp's 2e-5 of the largest output, some ten float32 ulps.
TEST(BlockedLayout, BatchNormTraining) {
  check([](const Env& e) { return batchnorm_training(e, false); }, 2e-5, "batchnorm training");
}
TEST(BlockedLayout, BatchNormTrainingWithFusedRelu) {
  check([](const Env& e) { return batchnorm_training(e, true); }, 2e-5, "batchnorm+relu training");
}
TEST(BlockedLayout, BatchNormEval) {
  check([](const Env& e) { return batchnorm_eval(e, false); }, 2e-5, "batchnorm eval");
  check([](const Env& e) { return batchnorm_eval(e, true); }, 2e-5, "batchnorm+relu eval");
}

// Max pooling moves values and adds overlapping windows' gradients in float in the outputs' order, as the
// NCHW kernel: 1e-6 of the reference (a few ulps), and the NCHW float32 run's bits.
TEST(BlockedLayout, MaxPool) { check(maxpool, 1e-6, "maxpool", /*bitwise_f32=*/true); }

// Through the NCHW fallback (no blocked kernels): the NCHW kernels' errors.
TEST(BlockedLayout, AvgPoolAndGlobalAvgPool) {
  check(avgpool, 1e-6, "avgpool");
  check(global_avgpool, 1e-6, "global_avgpool");
}

// Elementwise in memory order: one rounding at most, and the NCHW run's bits.
TEST(BlockedLayout, ReluAndResidualAdd) {
  check(elementwise, 2e-7, "relu/residual_add", /*bitwise_f32=*/true);
}

// --- The ops that address tensors by per-axis strides: binary ops in y's memory order (its [N, C/b, H, W, b]
// frame, operands blocked like y or plain NCHW: a squeeze-excite gate, constants, an NCHW mask, one shape),
// NCHW between exact reorders (a per-channel scale or LayerNorm, a shuffle, a concatenation off the blocks'
// boundaries) or whole blocks in place (a concatenation on them). Either way each value is computed from the
// same operands in the same order as in an NCHW run (the gradients' reductions too), so a blocked run gives
// the NCHW run's bits in float64 and float32 (the NCHW kernels' own accuracy: binary_test,
// channel_affine_test, channel_layernorm_test, channel_ops_test). Every output starts poisoned (NaN), and NaN
// equals nothing.
void check_exact(const std::function<Outputs(const Env&)>& run, const std::string& what) {
  for (const Blocking& b : kBlockings) {
    for (const DType dtype : {DType::F64, DType::F32}) {
      const std::string label = what + " " + name_of(b) + " " + std::string(dtype_name(dtype));
      const Outputs nchw = run(cpu(dtype, Layout::NCHW, b.channels));
      const Outputs blocked = run(cpu(dtype, b.layout, b.channels));
      ASSERT_EQ(blocked.size(), nchw.size()) << label;
      for (std::size_t k = 0; k < nchw.size(); ++k)
        EXPECT_EQ(blocked[k].second, nchw[k].second) << label << " " << nchw[k].first;
    }
  }
}

// a op b forward and backward over a [3, C, 7, 5] against `b_shape`.
Outputs binary(const Env& e, BinaryOp op, const Shape& b_shape) {
  const Shape shape{3, e.channels, 7, 5};
  const Tensor a = input(e, shape, 71), b = input(e, b_shape, 72, 0.5, 1.5), dy = input(e, shape, 73);
  const Tensor y = poisoned(e, shape), da = poisoned(e, shape), db = poisoned(e, b_shape);
  ops::binary_forward(e.ctx, op, a, b, y);
  ops::binary_backward(e.ctx, op, dy, a, b, da, db);
  return {{"y", values(e, y)}, {"da", values(e, da)}, {"db", values(e, db)}};
}

TEST(BlockedLayout, BinaryOpsBroadcastingAndInMemoryOrder) {
  check_exact([](const Env& e) { return binary(e, BinaryOp::Mul, {3, e.channels, 1, 1}); }, "squeeze-excite");
  check_exact([](const Env& e) { return binary(e, BinaryOp::Add, {1, e.channels, 1, 1}); }, "[1, C, 1, 1]");
  check_exact([](const Env& e) { return binary(e, BinaryOp::Div, {e.channels, 1, 1}); }, "[C, 1, 1]");
  check_exact([](const Env& e) { return binary(e, BinaryOp::Mul, {3, 1, 7, 5}); }, "NCHW [N, 1, H, W] mask");
  check_exact([](const Env& e) { return binary(e, BinaryOp::Sub, {3, e.channels, 7, 5}); }, "same shape");
}

// Concat of z[3, 16, 7, 5] into y[3, C + 16, 7, 5] (both blocked: C and 16 fill blocks of 8 and of 16)
// at channel C (whole blocks, copied in place) and at channel 4 (off the blocks: through NCHW, y's other
// channels kept), then Split back; and a [3, 5, 7, 5] piece (NCHW: 5 channels fill no block) into and out of
// the blocked x[3, C, 7, 5].
Outputs concat_split(const Env& e) {
  const std::int64_t c = e.channels;
  const Shape xs{3, c, 7, 5}, zs{3, 16, 7, 5}, ys{3, c + 16, 7, 5}, ps{3, 5, 7, 5};
  const Tensor x = input(e, xs, 81), z = input(e, zs, 82), piece = input(e, ps, 83);
  Outputs out;
  for (const std::int64_t at : {c, std::int64_t{4}}) {
    const Tensor y = input(e, ys, 84), back = poisoned(e, zs);
    ops::copy_into_channels(e.ctx, z, y, at);
    ops::copy_from_channels(e.ctx, y, at, back);
    out.emplace_back("concat at " + std::to_string(at), values(e, y));
    out.emplace_back("split at " + std::to_string(at), values(e, back));
  }
  const Tensor into = input(e, xs, 85), part = poisoned(e, ps);
  ops::copy_into_channels(e.ctx, piece, into, 3);
  ops::copy_from_channels(e.ctx, x, 2, part);
  out.emplace_back("NCHW piece into blocked", values(e, into));
  out.emplace_back("NCHW piece from blocked", values(e, part));
  const Tensor shuffled = poisoned(e, xs);
  ops::channel_shuffle(e.ctx, x, 4, shuffled);
  out.emplace_back("channel shuffle", values(e, shuffled));
  return out;
}

TEST(BlockedLayout, ConcatSplitAndShuffleOfChannels) { check_exact(concat_split, "channel copy"); }

// A per-channel scale and shift (and one value over everything, in memory order), then LayerNorm over each
// pixel's channels, forward and backward.
Outputs affine_and_layernorm(const Env& e) {
  const std::int64_t c = e.channels;
  const Shape shape{3, c, 7, 5};
  const Tensor x = input(e, shape, 91), dy = input(e, shape, 92);
  const Tensor scale = parameter(e, {c}, 93), shift = parameter(e, {1, c, 1, 1}, 94);
  const Tensor one = parameter(e, {1}, 95);
  Outputs out;
  const Tensor y = poisoned(e, shape), dx = poisoned(e, shape);
  const Tensor dscale = poisoned(e, {c}), dshift = poisoned(e, {c});
  ops::channel_affine_forward(e.ctx, x, scale, shift, y);
  ops::channel_affine_backward(e.ctx, x, scale, dy, dx, dscale, dshift);
  out.insert(out.end(), {{"affine y", values(e, y)},
                         {"affine dx", values(e, dx)},
                         {"affine dscale", values(e, dscale)},
                         {"affine dshift", values(e, dshift)}});
  // One value over everything runs in memory order: y and dx elementwise, so bitwise; its gradient would sum
  // in memory order (another rounding than NCHW's), so it is left out here.
  const Tensor y1 = poisoned(e, shape), dx1 = poisoned(e, shape);
  ops::channel_affine_forward(e.ctx, x, one, Tensor(), y1);
  ops::channel_affine_backward(e.ctx, x, one, dy, dx1, Tensor(), Tensor());
  out.insert(out.end(), {{"scalar y", values(e, y1)}, {"scalar dx", values(e, dx1)}});
  const Tensor gamma = input(e, {c}, 96, 0.5, 1.5), beta = parameter(e, {c}, 97);
  const Tensor ly = poisoned(e, shape), ldx = poisoned(e, shape);
  const Tensor dgamma = poisoned(e, {c}), dbeta = poisoned(e, {c});
  ops::channel_layernorm_forward(e.ctx, 1e-6, x, gamma, beta, ly);
  ops::channel_layernorm_backward(e.ctx, 1e-6, x, gamma, dy, ldx, dgamma, dbeta);
  out.insert(out.end(), {{"layernorm y", values(e, ly)},
                         {"layernorm dx", values(e, ldx)},
                         {"layernorm dgamma", values(e, dgamma)},
                         {"layernorm dbeta", values(e, dbeta)}});
  return out;
}

TEST(BlockedLayout, ChannelAffineAndLayerNorm) {
  check_exact(affine_and_layernorm, "channel affine/layernorm");
}

// A map pooled to one pixel: core/layout.h labels the [N, C, 1, 1] output NCHW (the same bytes as blocked),
// so max and average pooling take a blocked x with an NCHW y (and back), through NCHW.
Outputs pooled_to_one_pixel(const Env& e) {
  const Pool2dShape w{.n = 3,
                      .c = static_cast<int>(e.channels),
                      .h = 3,
                      .w = 3,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .stride_h = 1,
                      .stride_w = 1,
                      .pad_h = 0,
                      .pad_w = 0};
  const Shape in{3, e.channels, 3, 3}, out{3, e.channels, 1, 1};
  const Tensor x = input(e, in, 101), dy = input(e, out, 102);
  EXPECT_EQ(poisoned(e, out).layout(), Layout::NCHW);
  const Tensor y = poisoned(e, out), argmax = poisoned(e, out, DType::I32), dx = poisoned(e, in);
  ops::maxpool2d_forward(e.ctx, w, x, y, argmax);
  ops::maxpool2d_backward(e.ctx, w, dy, argmax, dx);
  const Tensor ay = poisoned(e, out), adx = poisoned(e, in);
  ops::avgpool2d_forward(e.ctx, AvgPool2dShape{w, false}, x, ay);
  ops::avgpool2d_backward(e.ctx, AvgPool2dShape{w, false}, dy, adx);
  return {{"max y", values(e, y)},
          {"argmax", values(e, argmax)},
          {"max dx", values(e, dx)},
          {"avg y", values(e, ay)},
          {"avg dx", values(e, adx)}};
}

TEST(BlockedLayout, PoolingToOnePixel) {
  EXPECT_EQ(activation_layout(Layout::NCHW16c, 32, 1), Layout::NCHW);
  EXPECT_EQ(activation_layout(Layout::NCHW16c, 32, 2), Layout::NCHW16c);
  EXPECT_EQ(activation_layout(Layout::NCHW8c, 12, 9), Layout::NCHW);
  EXPECT_EQ(activation_layout(Layout::NHWC, 32, 1), Layout::NHWC);
  check_exact(pooled_to_one_pixel, "pooled to 1x1");
}

}  // namespace
}  // namespace engine::testing::layout_cases
