// Rectangular convolutions (1x7 pad (0, 3), 7x1 pad (3, 0), 3x1 stride (2, 1): inception_v3's) through the
// CUDA layer path, cuDNN and the implicit-GEMM convolution, NCHW and NHWC: one training forward and backward
// against the same model on the CPU in float64 (the reference), same seed and batch. The kernels' own cases:
// tests/gpu/cuda_conv2d_test.cpp.
//
// Tolerance: each output is an fp32 sum of at most L = 7 * 5 * 2 * 11 * 5 = 3850 terms (dw of the 7x1 layer
// over the batch), within (L + 2) 2^-24 ~ 2.3e-4 of its magnitude (8x for cuDNN's transforms); in relative
// L2 over a tensor, errors of random sign add as sqrt(L): 1e-4 for the logits, 1e-3 for the gradients is
// over 10x that, and far below a wrong tap or index (O(1)).

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cuda/handles.h"
#include "tests/common/gpu.h"
#include "tests/cpu/conv2d_rect_net.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using testing::host_values;
using testing::rect_net;

double relative_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0.0, ref = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    ref += b[i] * b[i];
  }
  return a.size() == b.size() ? std::sqrt(diff) / std::max(std::sqrt(ref), 1e-30)
                              : std::numeric_limits<double>::infinity();
}

struct Step {
  std::vector<double> logits, dx, grads;
};

Step step(Model& m, const Tensor& x_host, const Tensor& dy_host) {
  const ExecutionContext& ctx = m.context();
  m.set_needs_input_grad(true);
  const Tensor x = x_host.to(ctx.device, ctx.stream);
  Step s;
  s.logits = host_values(m.forward(x, Mode::Train).to(Device::cpu(), ctx.stream));
  s.dx = host_values(m.backward(dy_host.to(ctx.device, ctx.stream)).to(Device::cpu(), ctx.stream));
  s.grads = host_values(m.flat_gradients().to(Device::cpu(), ctx.stream));
  return s;
}

TEST(Conv2dRectGpu, CudnnAndImplicitGemmMatchTheFloat64Reference) {
  SKIP_WITHOUT_GPU();
  set_device(0);
  Stream stream(0);
  cuda::CudaHandles handles(0, stream.get());
  const Tensor x = testing::random_tensor({2, 3, 9, 11}, DType::F32, 31);
  const Tensor dy = testing::random_tensor({2, 3}, DType::F32, 32);
  Model reference("rect", rect_net(), {3, 9, 11});
  reference.finalize(testing::cpu_context(DType::F64), 5);
  const Step want = step(reference, testing::host_tensor(host_values(x), x.shape(), DType::F64),
                         testing::host_tensor(host_values(dy), dy.shape(), DType::F64));
  for (const ConvAlgorithm algo : {ConvAlgorithm::Cudnn, ConvAlgorithm::ImplicitGemm}) {
    for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
      if (algo == ConvAlgorithm::ImplicitGemm && layout == Layout::NHWC) continue;  // NCHW only
      ExecutionContext c;
      c.device = Device::cuda(0);
      c.dtype = DType::F32;
      c.stream = stream.get();
      c.handles = &handles;
      c.conv_algorithm = algo;
      c.layout = layout;
      Model m("rect", rect_net(), {3, 9, 11});
      m.finalize(c, 5);  // the same seed: the reference's weights, rounded to float32 (both from Philox)
      const Step got = step(m, x, dy);
      const std::string what = fmt::format("{} {}", conv_algorithm_name(algo), layout_name(layout));
      EXPECT_LE(relative_l2(got.logits, want.logits), 1e-4) << what << ": logits";
      EXPECT_LE(relative_l2(got.dx, want.dx), 1e-3) << what << ": dx";
      EXPECT_LE(relative_l2(got.grads, want.grads), 1e-3) << what << ": parameter gradients";
    }
  }
}

}  // namespace
}  // namespace engine::layers
