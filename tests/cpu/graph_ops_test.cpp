// The Graph's several-input ops and the channel layers (layers/graph_ops.h, layers/channel_ops.h,
// GlobalAvgPool keeping [N, C, 1, 1]):
//  - the fast float32 kernels against the float64 reference (kernels/cpu), outputs poisoned with NaN first,
//    odd sizes, NCHW and NHWC: copies and element-wise values bitwise (one float operation, which double
//    then rounding reproduces), gradients summed over broadcast axes within their rounding bound;
//  - each op's hand-written backward against central differences in float64;
//  - a Graph wiring them (Split into two branches, a squeeze-excite style broadcasting Mul, Concat) inside a
//    Model: the gradients of every parameter and of the input, sums of several readers included.
#include "layers/graph_ops.h"

#include <cmath>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kernels/ops/binary.h"
#include "kernels/ops/channel_copy.h"
#include "kernels/ops/transpose.h"
#include "layers/channel_ops.h"
#include "layers/conv2d.h"
#include "layers/global_avgpool.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using testing::cpu_context;
using testing::host_tensor;
using testing::host_values;

constexpr double kU = 0x1p-24;

Tensor in_layout(const ExecutionContext& ctx, const Tensor& t) { return ops::to_layout(ctx, t, ctx.layout); }
std::vector<double> nchw_values(const ExecutionContext& ctx, const Tensor& t) {
  return host_values(ops::to_layout(ctx, t, Layout::NCHW));
}
Tensor poisoned(const ExecutionContext& ctx, const Shape& s, DType dtype) {
  Tensor t = Tensor::empty(s, dtype, Device::cpu(), nullptr, s.size() == 4 ? ctx.layout : Layout::NCHW);
  t.fill_bytes(0xFF);
  return t;
}
std::vector<double> absolute(std::vector<double> v) {
  for (double& x : v) x = std::abs(x);
  return v;
}

struct ShapePair {
  Shape a, b;
};
const ShapePair kPairs[] = {
    {{3, 5, 1, 1}, {3, 5, 4, 7}},   // squeeze-excite: [N, C, 1, 1] times [N, C, H, W]
    {{4, 9, 3, 19}, {4, 9, 1, 1}},  // 36 sums of 3 rows of 19: the fast path's 8 lanes, 16 a block, tails
    {{3, 5, 4, 7}, {3, 5, 4, 7}},   // equal shapes
    {{3, 5, 4, 7}, {}},             // a scalar
    {{5, 1, 1}, {3, 5, 4, 7}},      // a per-channel [C, 1, 1]
    {{3, 5, 4, 7}, {7}},            // a row: one value per column W
    {{3, 6}, {1, 6}},               // 2-d
};
const BinaryOp kOps[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div};

TEST(GraphOps, BinaryFastKernelsMatchTheReferenceInBothLayouts) {
  for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
    ExecutionContext f32 = cpu_context(DType::F32), f64 = cpu_context(DType::F64);
    f32.layout = f64.layout = layout;
    for (const ShapePair& p : kPairs) {
      const Shape y = ops::broadcast_shape("test", p.a, p.b);
      // Operands away from 0 (Div): |v| in [0.5, 1.5] with random signs.
      std::vector<double> av =
          engine::testing::random_values(static_cast<std::size_t>(shape_numel(p.a)), 1, 0.5, 1.5);
      std::vector<double> bv =
          engine::testing::random_values(static_cast<std::size_t>(shape_numel(p.b)), 2, -1.5, -0.5);
      const std::vector<double> dyv =
          engine::testing::random_values(static_cast<std::size_t>(shape_numel(y)), 3);
      // Values a float holds exactly, so both precisions start from the same numbers.
      for (auto* v : {&av, &bv}) {
        for (double& x : *v) x = static_cast<double>(static_cast<float>(x));
      }
      std::vector<double> dyf(dyv.begin(), dyv.end());
      for (double& x : dyf) x = static_cast<double>(static_cast<float>(x));
      for (const BinaryOp op : kOps) {
        std::vector<std::vector<double>> results[2];
        for (const ExecutionContext* ctx : {&f64, &f32}) {
          const Tensor a = in_layout(*ctx, host_tensor(av, p.a, ctx->dtype));
          const Tensor b = in_layout(*ctx, host_tensor(bv, p.b, ctx->dtype));
          const Tensor dy = in_layout(*ctx, host_tensor(dyf, y, ctx->dtype));
          Tensor out = poisoned(*ctx, y, ctx->dtype), da = poisoned(*ctx, p.a, ctx->dtype),
                 db = poisoned(*ctx, p.b, ctx->dtype);
          ops::binary_forward(*ctx, op, a, b, out);
          ops::binary_backward(*ctx, op, dy, a, b, da, db);
          results[ctx == &f32] = {nchw_values(*ctx, out), nchw_values(*ctx, da), nchw_values(*ctx, db)};
        }
        // Magnitudes: the reference on |a|, |b|, |dy| gives sum |term| of each gradient element.
        std::vector<double> mag_a, mag_b;
        {
          const Tensor a = host_tensor(absolute(av), p.a, DType::F64),
                       b = host_tensor(absolute(bv), p.b, DType::F64);
          const Tensor dy = host_tensor(absolute(dyf), y, DType::F64);
          Tensor out = poisoned(cpu_context(DType::F64), y, DType::F64);
          Tensor da = poisoned(cpu_context(DType::F64), p.a, DType::F64),
                 db = poisoned(cpu_context(DType::F64), p.b, DType::F64);
          ops::binary_backward(cpu_context(DType::F64), op, dy, a, b, da, db);
          mag_a = absolute(host_values(da));
          mag_b = absolute(host_values(db));
        }
        const auto& ref = results[0];
        const auto& got = results[1];
        for (std::size_t i = 0; i < ref[0].size(); ++i) {
          // One float operation: correctly rounded, as double-then-round is.
          ASSERT_EQ(static_cast<float>(ref[0][i]), static_cast<float>(got[0][i])) << "y " << i;
        }
        // Each term has at most 3 float roundings (Div's -(dy a) / (b b)), the double sum adds ~nothing,
        // the result one more: 4 u of sum |term| + u |result|, and slack of 2x.
        for (int k = 0; k < 2; ++k) {
          const std::vector<double>& mag = k == 0 ? mag_a : mag_b;
          for (std::size_t i = 0; i < ref[1 + k].size(); ++i) {
            const double tol = 8 * kU * mag[i] + 2 * kU * std::abs(ref[1 + k][i]);
            ASSERT_LE(std::abs(ref[1 + k][i] - got[1 + k][i]), tol) << (k ? "db " : "da ") << i;
          }
        }
      }
    }
  }
}

// The float64 backward of one GraphOp against central differences, for inputs of `shapes`.
void check_op_gradients(GraphOp& op, const std::vector<Shape>& shapes, double lo = -1.0, double hi = 1.0) {
  const ExecutionContext ctx = cpu_context(DType::F64);
  std::vector<std::vector<double>> data;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    data.push_back(
        engine::testing::random_values(static_cast<std::size_t>(shape_numel(shapes[i])), 10 + i, lo, hi));
  auto inputs = [&]() {
    std::vector<Tensor> x;
    for (std::size_t i = 0; i < shapes.size(); ++i) x.push_back(host_tensor(data[i], shapes[i], DType::F64));
    return x;
  };
  engine::testing::GradCheckCase c;
  for (std::size_t i = 0; i < shapes.size(); ++i) c.inputs.push_back({fmt::format("x{}", i), &data[i]});
  c.forward = [&](std::uint64_t) {
    std::vector<double> all;
    for (const Tensor& y : op.forward(ctx, inputs(), Mode::Train)) {
      const std::vector<double> v = host_values(y);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  c.backward = [&](const std::vector<double>& dy, std::uint64_t) {
    const std::vector<Tensor> ys = op.forward(ctx, inputs(), Mode::Train);
    std::vector<Tensor> dys;
    std::size_t at = 0;
    for (const Tensor& y : ys) {
      const auto n = static_cast<std::size_t>(y.numel());
      dys.push_back(host_tensor(std::vector<double>(dy.begin() + static_cast<std::ptrdiff_t>(at),
                                                    dy.begin() + static_cast<std::ptrdiff_t>(at + n)),
                                y.shape(), DType::F64));
      at += n;
    }
    std::vector<std::vector<double>> grads;
    for (const Tensor& g : op.backward(ctx, dys, std::vector<bool>(shapes.size(), true)))
      grads.push_back(host_values(g));
    return grads;
  };
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(GraphOps, BackwardsMatchCentralDifferences) {
  for (const ShapePair& p : kPairs) {
    for (const BinaryOp op : kOps) {
      Binary b(op);
      // Div: the divisor away from 0.
      check_op_gradients(b, {p.a, p.b}, op == BinaryOp::Div ? 0.5 : -1.0, op == BinaryOp::Div ? 1.5 : 1.0);
    }
  }
  Concat concat;
  check_op_gradients(concat, {{2, 3, 5, 7}, {2, 1, 5, 7}, {2, 4, 5, 7}});
  Split split({1, 4, 2});
  check_op_gradients(split, {{2, 7, 3, 5}});
}

// A Split output nothing reads gets a zero gradient; the outputs of ops are the input's channels.
TEST(GraphOps, SplitAndConcatMoveChannelsInBothLayouts) {
  for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
    for (const DType dtype : {DType::F32, DType::F64}) {
      ExecutionContext ctx = cpu_context(dtype);
      ctx.layout = layout;
      const Shape s{2, 7, 3, 5};
      std::vector<double> xv = engine::testing::random_values(static_cast<std::size_t>(shape_numel(s)), 4);
      for (double& v : xv)
        v = static_cast<double>(static_cast<float>(v));  // the same values in both precisions
      const Tensor x = in_layout(ctx, host_tensor(xv, s, dtype));
      Split split({3, 4});
      const std::vector<Tensor> parts = split.forward(ctx, {x}, Mode::Train);
      const std::vector<double> p0 = nchw_values(ctx, parts[0]), p1 = nchw_values(ctx, parts[1]);
      for (std::int64_t n = 0; n < 2; ++n) {
        for (std::int64_t c = 0; c < 7; ++c) {
          for (std::int64_t i = 0; i < 15; ++i) {
            const double want = xv[static_cast<std::size_t>((n * 7 + c) * 15 + i)];
            const double got = c < 3 ? p0[static_cast<std::size_t>((n * 3 + c) * 15 + i)]
                                     : p1[static_cast<std::size_t>((n * 4 + c - 3) * 15 + i)];
            ASSERT_EQ(got, want);
          }
        }
      }
      Concat concat;
      const Tensor back = concat.forward(ctx, {parts[0], parts[1]}, Mode::Train)[0];
      EXPECT_EQ(nchw_values(ctx, back), nchw_values(ctx, x));
      // The gradient of the unread second part is zero; the first part's comes through.
      const std::vector<Tensor> dx = split.backward(ctx, {parts[0], Tensor()}, {true});
      const std::vector<double> g = nchw_values(ctx, dx[0]);
      for (std::int64_t n = 0; n < 2; ++n) {
        for (std::int64_t c = 0; c < 7; ++c) {
          for (std::int64_t i = 0; i < 15; ++i) {
            const double v = g[static_cast<std::size_t>((n * 7 + c) * 15 + i)];
            ASSERT_EQ(v, c < 3 ? xv[static_cast<std::size_t>((n * 7 + c) * 15 + i)] : 0.0);
          }
        }
      }
    }
  }
}

// Channel shuffle's output channel c is input channel (c % g) * (C / g) + c / g; its backward inverts it.
// ChannelSlice takes a channel range, and its backward puts dy back in zeros.
TEST(GraphOps, ChannelShuffleAndSlice) {
  for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
    for (const DType dtype : {DType::F32, DType::F64}) {
      ExecutionContext ctx = cpu_context(dtype);
      ctx.layout = layout;
      const Shape s{3, 6, 5, 3};
      std::vector<double> xv(static_cast<std::size_t>(shape_numel(s)));
      for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<double>(i);
      Model m("shuffle", std::make_unique<ChannelShuffle>(2, 6), {6, 5, 3});
      m.finalize(ctx, 1);
      m.set_needs_input_grad(true);
      const Tensor x = in_layout(ctx, host_tensor(xv, s, dtype));
      const std::vector<double> y = nchw_values(ctx, m.forward(x, Mode::Train));
      for (std::int64_t n = 0; n < 3; ++n) {
        for (std::int64_t c = 0; c < 6; ++c) {
          const std::int64_t from = (c % 2) * 3 + c / 2;
          for (std::int64_t i = 0; i < 15; ++i)
            ASSERT_EQ(y[static_cast<std::size_t>((n * 6 + c) * 15 + i)],
                      xv[static_cast<std::size_t>((n * 6 + from) * 15 + i)]);
        }
      }
      const Tensor dx = m.backward(in_layout(ctx, host_tensor(y, s, dtype)));
      EXPECT_EQ(nchw_values(ctx, dx), xv) << "the backward is the inverse permutation";

      Model sl("slice", std::make_unique<ChannelSlice>(1, 4), {6, 5, 3});
      sl.finalize(ctx, 1);
      sl.set_needs_input_grad(true);
      const std::vector<double> ys = nchw_values(ctx, sl.forward(x, Mode::Train));
      ASSERT_EQ(ys.size(), 3u * 3 * 15);
      for (std::int64_t n = 0; n < 3; ++n) {
        for (std::int64_t c = 0; c < 3; ++c) {
          for (std::int64_t i = 0; i < 15; ++i)
            ASSERT_EQ(ys[static_cast<std::size_t>((n * 3 + c) * 15 + i)],
                      xv[static_cast<std::size_t>((n * 6 + c + 1) * 15 + i)]);
        }
      }
      const std::vector<double> ds =
          nchw_values(ctx, sl.backward(in_layout(ctx, host_tensor(ys, {3, 3, 5, 3}, dtype))));
      for (std::size_t i = 0; i < ds.size(); ++i) {
        const std::int64_t c = static_cast<std::int64_t>(i / 15) % 6;
        ASSERT_EQ(ds[i], c >= 1 && c < 4 ? xv[i] : 0.0) << i;
      }
    }
  }
}

// conv -> Split(2, 4) -> [ChannelShuffle(2) | GAP keeping [N, C, 1, 1] -> conv 1x1 -> ReLU, times the
// split part (broadcast)] -> Concat -> conv output read twice (Add of itself through Sub) -> GAP -> Linear.
TEST(GraphOps, AGraphOfThemHasTheGradientsOfCentralDifferences) {
  auto g = std::make_unique<Graph>();
  const int c1 = g->add_node("conv1",
                             std::make_unique<Conv2d>(Conv2dOptions{
                                 .in_channels = 3, .out_channels = 6, .kernel_size = 3, .padding = 1}),
                             0);
  const std::vector<int> parts =
      g->add_op("split", std::make_unique<Split>(std::vector<std::int64_t>{2, 4}), {c1});
  const int shuffled = g->add_node("shuffle", std::make_unique<ChannelShuffle>(2, 2), parts[0]);
  const int pooled = g->add_node("pool", std::make_unique<GlobalAvgPool>(true), parts[1]);
  const int se = g->add_node(
      "se", std::make_unique<Conv2d>(Conv2dOptions{.in_channels = 4, .out_channels = 4, .kernel_size = 1}),
      pooled);
  const int gate = g->add_node("gate", std::make_unique<ReLU>(), se);
  const int scaled = g->add_op("mul", std::make_unique<Binary>(BinaryOp::Mul), {parts[1], gate})[0];
  const int joined = g->add_op("cat", std::make_unique<Concat>(), {shuffled, scaled})[0];
  const int diff = g->add_op("sub", std::make_unique<Binary>(BinaryOp::Sub), {joined, c1})[0];
  const int sum =
      g->add_op("div", std::make_unique<Binary>(BinaryOp::Div), {diff, g->add_constant({2.0}, {})})[0];
  const int head = g->add_node("head", std::make_unique<GlobalAvgPool>(), sum);
  g->set_output(g->add_node("fc", std::make_unique<Linear>(6, 4), head));
  Model m("graph", std::move(g), {3, 5, 3});
  m.set_fusion(false);
  m.finalize(cpu_context(DType::F64), 3);
  const Tensor x = testing::random_tensor({2, 3, 5, 3}, DType::F64, 5);
  const Tensor labels = testing::random_labels(2, 4, 6);
  testing::ModelCheck check;
  check.kind = testing::CheckKind::Coordinates;
  const engine::testing::GradCheckResult r = testing::check_model_gradients(m, x, labels, check);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, 100u);
}

}  // namespace
}  // namespace engine::layers
