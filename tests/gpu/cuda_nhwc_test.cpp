// The CUDA kernels in NHWC against the float64 NCHW reference on the CPU, on the cases of
// tests/common/layout_op_cases.h (odd sizes, outputs poisoned): cuDNN's NHWC convolution (the [K, R, S, C]
// filter copies, the row-wise bias add and gradient), the NHWC BatchNorm kernels (the row-tile reduction of
// channel_reduce_nhwc.cuh, fused ReLU, eval), max pooling, global average pooling, the elementwise ops and
// the transpose kernel itself; the implicit-GEMM convolution refuses NHWC; a whole vgg6 step in NHWC
// equals the NCHW one, in float32 and with bf16 activations. TF32 is off: float32 math, so the tolerances are
// float32's (beside each).

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cuda/handles.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/common/error_of.h"
#include "tests/common/gpu.h"
#include "tests/common/layout_op_cases.h"

namespace engine::testing::layout_cases {
namespace {

struct Gpu {
  Stream stream{0};
  cuda::CudaHandles handles{0, stream.get(), cuda::training_handles_options(/*deterministic=*/true, false)};
  Env env(Layout layout) {
    Env e{ExecutionContext{}, layout};
    e.ctx.device = Device::cuda(0);
    e.ctx.stream = stream.get();
    e.ctx.handles = &handles;
    return e;
  }
};

Env cpu64() {
  Env e{ExecutionContext{}, Layout::NCHW};
  e.ctx.dtype = DType::F64;
  return e;
}

template <typename Case>
void check(const Case& run, double tol, const std::string& what) {
  Gpu gpu;
  const Outputs reference = run(cpu64());
  expect_close(run(gpu.env(Layout::NHWC)), reference, tol, what + " CUDA NHWC");
  expect_close(run(gpu.env(Layout::NCHW)), reference, tol, what + " CUDA NCHW");
}

// cuDNN in float32 (TF32 off): sums of at most 45 products of values <= 1 in float32, whatever cuDNN's
// order: <= 45 * 2^-23 * 45 = 2.4e-4 worst case (tests/cpu/nhwc_ops_test.cpp).
TEST(CudaNhwc, Conv2dCudnn) {
  SKIP_WITHOUT_GPU();
  check(conv2d, 3e-4, "conv2d");
}

// Reductions in double, elementwise passes in float: some ten float32 ulps of the largest output.
TEST(CudaNhwc, BatchNorm) {
  SKIP_WITHOUT_GPU();
  check([](const Env& e) { return batchnorm_training(e, false); }, 2e-5, "batchnorm training");
  check([](const Env& e) { return batchnorm_training(e, true); }, 2e-5, "batchnorm+relu training");
  check([](const Env& e) { return batchnorm_eval(e, false); }, 2e-5, "batchnorm eval");
  check([](const Env& e) { return batchnorm_eval(e, true); }, 2e-5, "batchnorm+relu eval");
}

// Max pooling: exact values and indices; at most 4 gradients summed in double and rounded once.
TEST(CudaNhwc, MaxPool) {
  SKIP_WITHOUT_GPU();
  check(maxpool, 1e-6, "maxpool");
}

// Means and shares summed in double, rounded once.
TEST(CudaNhwc, AvgPool) {
  SKIP_WITHOUT_GPU();
  check(avgpool, 1e-6, "avgpool");
}

// A mean of 21 values in double, rounded once.
TEST(CudaNhwc, GlobalAvgPool) {
  SKIP_WITHOUT_GPU();
  check(global_avgpool, 1e-6, "global_avgpool");
}

// One rounding at most.
TEST(CudaNhwc, ReluAndResidualAdd) {
  SKIP_WITHOUT_GPU();
  check(elementwise, 2e-7, "relu/residual_add");
}

// A BatchNorm large enough for several channel tiles and row chunks of the NHWC reduction (C = 70: three
// tiles, the last partial; M = 4*33*33 = 4356 rows: five chunks), against the reference.
TEST(CudaNhwc, BatchNormSpansSeveralTilesAndChunks) {
  SKIP_WITHOUT_GPU();
  auto big = [](const Env& e) {
    const BatchNorm2dShape s{.n = 4, .c = 70, .h = 33, .w = 33};
    const Shape shape{s.n, s.c, s.h, s.w};
    const Tensor x = input(e, shape, 71, -3.0, 5.0);
    const Tensor gamma = parameter(e, {s.c}, 72), beta = parameter(e, {s.c}, 73);
    const Tensor rm = parameter(e, {s.c}, 74), rv = random_in(e, {s.c}, 75, Layout::NCHW, 0.5, 1.5);
    const Tensor y = poisoned(e, shape), mean = poisoned(e, {s.c}), invstd = poisoned(e, {s.c});
    ops::batchnorm2d_forward_training(e.ctx, s, x, gamma, beta, y, mean, invstd, rm, rv, 0.1, 1e-5, true);
    const Tensor dy = input(e, shape, 76);
    const Tensor dx = poisoned(e, shape), dg = poisoned(e, {s.c}), db = poisoned(e, {s.c});
    ops::batchnorm2d_backward_training(e.ctx, s, x, gamma, mean, invstd, dy, dx, dg, db, y);
    return Outputs{{"y", values(e, y)},     {"mean", values(e, mean)}, {"invstd", values(e, invstd)},
                   {"rv", values(e, rv)},   {"dx", values(e, dx)},     {"dgamma", values(e, dg)},
                   {"dbeta", values(e, db)}};
  };
  // dgamma/dbeta sum 4356 terms: accumulated in double, rounded once; y and dx as above.
  check(big, 2e-5, "batchnorm 70 channels");
}

TEST(CudaNhwc, TransposeMatchesTheCpuBitwise) {
  SKIP_WITHOUT_GPU();
  Gpu gpu;
  const Env e = gpu.env(Layout::NHWC);
  const Shape shape{3, 37, 5, 41};  // not multiples of the 32x32 tile
  const Tensor x = input(e, shape, 81);
  const Tensor host = x.to(Device::cpu(), e.ctx.stream);
  const Tensor back = ops::to_layout(e.ctx, x, Layout::NCHW);
  const Tensor host_back = ops::to_layout(ExecutionContext{}, host, Layout::NCHW);
  EXPECT_EQ(back.to(Device::cpu(), e.ctx.stream).to_vector<float>(), host_back.to_vector<float>());
}

// Groups and dilation on cuDNN (cudnnSetConvolutionGroupCount, the descriptor's dilation) in both layouts;
// the implicit-GEMM convolution is dense, so a context asking for it runs these shapes on cuDNN.
TEST(CudaNhwc, GroupedAndDilatedConv2dRunOnCudnn) {
  SKIP_WITHOUT_GPU();
  check(grouped_conv2d, 3e-4, "grouped conv2d");
  Gpu gpu;
  Env e = gpu.env(Layout::NCHW);
  e.ctx.conv_algorithm = ConvAlgorithm::ImplicitGemm;
  expect_close(grouped_conv2d(e), grouped_conv2d(cpu64()), 3e-4, "grouped conv2d, implicit GEMM asked");
}

TEST(CudaNhwc, ImplicitGemmConvolutionRefusesNhwc) {
  SKIP_WITHOUT_GPU();
  Gpu gpu;
  Env e = gpu.env(Layout::NHWC);
  e.ctx.conv_algorithm = ConvAlgorithm::ImplicitGemm;
  const std::string msg = error_of([&] { (void)conv2d(e); });
  EXPECT_NE(msg.find("implicit-GEMM convolution runs NCHW only"), std::string::npos) << msg;
}

// One vgg6 training step (forward, loss, backward) in `layout`, bf16 activations when `bf16`; its logits and
// flat gradients on the host.
Outputs vgg6_step(Gpu& gpu, Layout layout, bool bf16) {
  ExecutionContext ctx = gpu.env(layout).ctx;
  ctx.layout = layout;
  ctx.autocast_bf16 = bf16;
  layers::Model m = layers::build_model("vgg6", 3, 10, 32, 32);
  m.finalize(ctx, 17);
  const Tensor x = random_in(gpu.env(Layout::NCHW), {4, 3, 32, 32}, 91, Layout::NCHW, -1.0, 1.0);
  Tensor labels = Tensor::empty({4}, DType::I32);
  for (int i = 0; i < 4; ++i) labels.data<std::int32_t>()[i] = i * 3 % 10;
  const Tensor dlabels = labels.to(ctx.device, ctx.stream);
  layers::SoftmaxCrossEntropy loss;
  const Tensor logits = m.forward(x, layers::Mode::Train);
  loss.forward(m.context(), logits, dlabels);
  m.backward(loss.backward());
  Env host{ExecutionContext{}, Layout::NCHW};
  host.ctx.stream = ctx.stream;
  return Outputs{{"logits", values(host, logits)}, {"grads", values(host, m.flat_gradients())}};
}

TEST(CudaNhwc, Vgg6TrainingStepMatchesNchw) {
  SKIP_WITHOUT_GPU();
  Gpu gpu;
  // cuDNN may pick different algorithms per layout (different float32 summation orders), and BatchNorm's
  // backward amplifies those through one step: 1e-4 of the largest magnitude, still far below what a
  // misplaced element does.
  expect_close(vgg6_step(gpu, Layout::NHWC, false), vgg6_step(gpu, Layout::NCHW, false), 1e-4,
               "vgg6 NHWC vs NCHW");
}

TEST(CudaNhwc, Vgg6Bf16TrainingStepMatchesNchw) {
  SKIP_WITHOUT_GPU();
  Gpu gpu;
  // bf16 activations: the two layouts' cuDNN algorithms sum the same exact products in different fp32
  // orders, so an output whose two sums straddle a bf16 rounding boundary differs by one bf16 ulp (2^-8
  // relative); such flips are sparse, and through vgg6's six convolutions and BatchNorm's backward they add
  // up to a few ulps of the largest magnitude. 2^-5 (8 bf16 ulps) bounds that and stays far below what a
  // misplaced element does (O(1)).
  expect_close(vgg6_step(gpu, Layout::NHWC, true), vgg6_step(gpu, Layout::NCHW, true), 1.0 / 32.0,
               "vgg6 bf16 NHWC vs NCHW");
}

}  // namespace
}  // namespace engine::testing::layout_cases
