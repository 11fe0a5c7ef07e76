// Every op with 4-d tensors in NHWC on the CPU (kernels/ops/nchw_fallback.h: transposes around the NCHW
// kernels) against the float64 NCHW reference, on the cases of tests/common/layout_op_cases.h (odd sizes,
// outputs poisoned). Two checks per op:
//  - float64 in NHWC equals float64 in NCHW bitwise: the same reference kernel on the same values, the
//    transposes being exact permutations;
//  - float32 in NHWC is within float32's error of the float64 reference (tolerances beside each case).
// Plus mixed layouts refused by the ops that take several 4-d tensors.

#include <string>

#include <gtest/gtest.h>

#include "tests/common/error_of.h"
#include "tests/common/layout_op_cases.h"

namespace engine::testing::layout_cases {
namespace {

Env cpu(DType dtype, Layout layout) {
  Env e{ExecutionContext{}, layout};
  e.ctx.dtype = dtype;
  return e;
}

template <typename Case>
void check(const Case& run, double tol, const std::string& what) {
  const Outputs reference = run(cpu(DType::F64, Layout::NCHW));
  const Outputs nhwc64 = run(cpu(DType::F64, Layout::NHWC));
  ASSERT_EQ(nhwc64.size(), reference.size());
  for (std::size_t k = 0; k < reference.size(); ++k)
    EXPECT_EQ(nhwc64[k].second, reference[k].second) << what << " float64 NHWC " << reference[k].first;
  expect_close(run(cpu(DType::F32, Layout::NHWC)), reference, tol, what + " float32 NHWC");
}

// Conv: inputs rounded to float32 (2^-24 relative each) and sums of at most L = 45 products (C*R*S forward,
// K*R*S for dx, N*P*Q = 36 for dw) accumulated in float32 by oneDNN: |error| <= L * 2^-23 * sum |terms|
// <= 45 * 1.2e-7 * 45 = 2.4e-4 in the worst case for |values| <= 1. A layout mistake moves values by O(1).
TEST(NhwcOpsCpu, Conv2d) { check(conv2d, 3e-4, "conv2d"); }

// BatchNorm: the float32 kernels reduce in double and normalize in float (a few roundings of values of
// order 1-4): 2e-5 relative to the largest output is some ten float32 ulps.
TEST(NhwcOpsCpu, BatchNormTraining) {
  check([](const Env& e) { return batchnorm_training(e, false); }, 2e-5, "batchnorm training");
}
TEST(NhwcOpsCpu, BatchNormTrainingWithFusedRelu) {
  check([](const Env& e) { return batchnorm_training(e, true); }, 2e-5, "batchnorm+relu training");
}
TEST(NhwcOpsCpu, BatchNormEval) {
  check([](const Env& e) { return batchnorm_eval(e, false); }, 2e-5, "batchnorm eval");
  check([](const Env& e) { return batchnorm_eval(e, true); }, 2e-5, "batchnorm+relu eval");
}

// Grouped, dilated and depthwise convolutions through oneDNN (goihw weights, dilated descriptors): sums of up
// to 27 products for y and dx and 216 (N*P*Q) for dw, in float32: errors of order sqrt(L) 2^-24 of the
// largest output, far inside 3e-4 of it; a wrong group, tap or dilation moves values by O(1).
TEST(NhwcOpsCpu, GroupedAndDilatedConv2d) { check(grouped_conv2d, 3e-4, "grouped conv2d"); }

// Max pooling moves values (exact) and sums at most 4 gradients in double, rounded once: 1e-6 is several
// ulps; the argmax indices must be equal (integers well inside the tolerance's 1e-6 * max(1, 41)).
TEST(NhwcOpsCpu, MaxPool) { check(maxpool, 1e-6, "maxpool"); }

// Average pooling: means of at most 6 float32 values and sums of their shares, in double, rounded once.
TEST(NhwcOpsCpu, AvgPool) { check(avgpool, 1e-6, "avgpool"); }

// Global average pooling: a mean of 21 float32 values accumulated in double, rounded once: 1e-6.
TEST(NhwcOpsCpu, GlobalAvgPool) { check(global_avgpool, 1e-6, "global_avgpool"); }

// Elementwise ops in memory order: one rounding at most (2^-24 relative): 2e-7.
TEST(NhwcOpsCpu, ReluAndResidualAdd) { check(elementwise, 2e-7, "relu/residual_add"); }

TEST(NhwcOpsCpu, MixedLayoutsAreRefusedNamingTheOpAndTheTensors) {
  const Env nhwc = cpu(DType::F32, Layout::NHWC), nchw = cpu(DType::F32, Layout::NCHW);
  const Conv2dShape s{.n = 1, .c = 2, .h = 3, .w = 3, .k = 2, .r = 1, .s = 1};
  const Tensor x = input(nhwc, {1, 2, 3, 3}, 1), w = parameter(nhwc, {2, 2, 1, 1}, 2);
  const Tensor y = poisoned(nchw, {1, 2, 3, 3});
  const std::string conv = error_of([&] { ops::conv2d_forward(nhwc.ctx, s, x, w, Tensor(), y); });
  EXPECT_NE(conv.find("conv2d: mixed layouts"), std::string::npos) << conv;
  EXPECT_NE(conv.find("x float32[1, 2, 3, 3] NHWC"), std::string::npos) << conv;
  const BatchNorm2dShape b{.n = 1, .c = 2, .h = 3, .w = 3};
  const Tensor g = parameter(nhwc, {2}, 3), mean = poisoned(nhwc, {2}), invstd = poisoned(nhwc, {2});
  const std::string bn = error_of([&] {
    ops::batchnorm2d_forward_training(nhwc.ctx, b, x, g, g, y, mean, invstd, Tensor(), Tensor(), 0.1, 1e-5);
  });
  EXPECT_NE(bn.find("batchnorm2d: mixed layouts"), std::string::npos) << bn;
}

}  // namespace
}  // namespace engine::testing::layout_cases
