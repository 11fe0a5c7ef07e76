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
// Plus: the reorder's element placement, a blocked tensor refused by ops that address NCHW/NHWC by strides,
// and on a CUDA device.

#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "kernels/ops/binary.h"
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

TEST(BlockedLayout, OpsAddressingByStridesRefuseIt) {
  const Env e = cpu(DType::F32, Layout::NCHW16c, 16);
  // A per-channel constant [1, C, 1, 1] beside the activation, both blocked (layers/graph.cpp's constants).
  const Tensor a = input(e, {2, 16, 3, 3}, 1), bias = input(e, {1, 16, 1, 1}, 2);
  const Tensor y = poisoned(e, {2, 16, 3, 3});
  const std::string message = error_of([&] { ops::binary_forward(e.ctx, BinaryOp::Add, a, bias, y); });
  EXPECT_NE(message.find("blocked nChw16c layout, which this op does not take"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace engine::testing::layout_cases
