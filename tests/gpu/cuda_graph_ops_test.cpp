// The CUDA path of the Graph's several-input ops and the channel layers against the fast CPU kernels, which
// apply the same float formulas (kernels/broadcast.h) and sum gradients in double in the same order: the
// broadcasting Add/Sub/Mul/Div forward and both gradients, Concat/Split/Slice copies and the channel
// shuffle, bit for bit, in NCHW and NHWC, odd sizes, outputs poisoned with NaN first.
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/ops/binary.h"
#include "kernels/ops/channel_copy.h"
#include "kernels/ops/transpose.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

struct Contexts {
  Stream stream{0};
  ExecutionContext gpu, cpu;
  explicit Contexts(Layout layout) {
    gpu.device = Device::cuda(0);
    gpu.stream = stream.get();
    gpu.layout = cpu.layout = layout;
  }
};

Tensor on(const ExecutionContext& ctx, const std::vector<float>& v, const Shape& s) {
  const Tensor host = Tensor::from_vector(v, s);
  return ops::to_layout(ctx, host.to(ctx.device, ctx.stream), s.size() == 4 ? ctx.layout : Layout::NCHW);
}

Tensor poison(const ExecutionContext& ctx, const Shape& s) {
  Tensor t = Tensor::empty(s, DType::F32, ctx.device, ctx.stream, s.size() == 4 ? ctx.layout : Layout::NCHW);
  t.fill_bytes(0xFF, ctx.stream);
  return t;
}

std::vector<float> back(const ExecutionContext& ctx, const Tensor& t) {
  return ops::to_layout(ctx, t, Layout::NCHW).to(Device::cpu(), ctx.stream).to_vector<float>();
}

TEST(CudaGraphOps, BinaryOpsEqualTheFastCpuKernelsBitwise) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::pair<Shape, Shape>> pairs = {
      {{3, 5, 1, 1}, {3, 5, 4, 7}}, {{3, 5, 4, 7}, {3, 5, 4, 7}}, {{3, 5, 4, 7}, {}},
      {{5, 1, 1}, {3, 5, 4, 7}},    {{3, 5, 4, 7}, {7}},          {{3, 6}, {1, 6}}};
  for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
    Contexts c(layout);
    for (const auto& [sa, sb] : pairs) {
      const Shape sy = ops::broadcast_shape("test", sa, sb);
      const auto a = nonzero_floats(static_cast<std::size_t>(shape_numel(sa)), 1, 0.5f, 1.5f);
      const auto b = nonzero_floats(static_cast<std::size_t>(shape_numel(sb)), 2, 0.5f, 1.5f);
      const auto dy = nonzero_floats(static_cast<std::size_t>(shape_numel(sy)), 3);
      for (const BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div}) {
        std::vector<std::vector<float>> results[2];
        for (const ExecutionContext* ctx : {&c.cpu, &c.gpu}) {
          const Tensor ta = on(*ctx, a, sa), tb = on(*ctx, b, sb), tdy = on(*ctx, dy, sy);
          Tensor y = poison(*ctx, sy), da = poison(*ctx, sa), db = poison(*ctx, sb);
          ops::binary_forward(*ctx, op, ta, tb, y);
          ops::binary_backward(*ctx, op, tdy, ta, tb, da, db);
          results[ctx == &c.gpu] = {back(*ctx, y), back(*ctx, da), back(*ctx, db)};
        }
        for (int k = 0; k < 3; ++k)
          EXPECT_TRUE(bitwise_equal(results[1][k], results[0][k])) << "output " << k;
      }
    }
  }
}

TEST(CudaGraphOps, ChannelCopiesAndShuffleEqualTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
    Contexts c(layout);
    const Shape s{3, 7, 5, 3}, part{3, 3, 5, 3};
    const auto x = nonzero_floats(static_cast<std::size_t>(shape_numel(s)), 4);
    std::vector<std::vector<float>> results[2];
    for (const ExecutionContext* ctx : {&c.cpu, &c.gpu}) {
      const Tensor tx = on(*ctx, x, s);
      Tensor sliced = poison(*ctx, part), wide = poison(*ctx, s);
      ops::copy_from_channels(*ctx, tx, 2, sliced);    // Split's and Slice's forward
      ops::copy_into_channels(*ctx, tx, wide, 0);      // Concat of one input
      ops::copy_into_channels(*ctx, sliced, wide, 4);  // overwrites channels [4, 7)
      const Tensor x6 = on(*ctx, std::vector<float>(x.begin(), x.begin() + 3 * 6 * 15), {3, 6, 5, 3});
      Tensor s6 = poison(*ctx, {3, 6, 5, 3});
      ops::channel_shuffle(*ctx, x6, 2, s6);
      results[ctx == &c.gpu] = {back(*ctx, sliced), back(*ctx, wide), back(*ctx, s6)};
    }
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(bitwise_equal(results[1][k], results[0][k])) << "output " << k;
  }
}

}  // namespace
}  // namespace engine
