// The bf16 CUDA kernels (bf16 activation storage, kernels/ops/bf16_storage.h) against the float32 kernels:
// each bf16 kernel loads bf16 to float, runs the float32 kernel's arithmetic in the float32 kernel's order
// and rounds once at the store, so its output must be, BIT FOR BIT, the float32 kernel's output on the
// widened inputs rounded to bf16 (the CPU path's data flow: widen, float kernel, round). No tolerance is
// needed: the float32 kernels are themselves checked against the float64 reference by their own tests
// (cuda_elementwise_test, cuda_maxpool2d_test, cuda_batchnorm2d_test, ...), and the rounding is the only
// new step. Float outputs of the same ops (BatchNorm's dgamma and dbeta) must be bitwise equal too.
// For the kernels whose float32 versions equal the CPU's bitwise (ReLU, residual add, dropout, max-pool,
// average-pool backward), the bf16 results also equal the CPU bf16 path's. Odd sizes (vector tails and
// misaligned starts), outputs poisoned with NaN first. Pooling and BatchNorm in both layouts (NCHW, NHWC).
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cuda/handles.h"
#include "kernels/ops/avgpool2d.h"
#include "kernels/ops/batchnorm2d.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/cast.h"
#include "kernels/ops/dropout.h"
#include "kernels/ops/global_avgpool.h"
#include "kernels/ops/maxpool2d.h"
#include "kernels/ops/relu.h"
#include "kernels/ops/residual_add.h"
#include "kernels/ops/transpose.h"
#include "tests/common/bf16_tolerance.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using Tensors = std::vector<Tensor>;
using Op = std::function<void(const ExecutionContext&, const Tensors& in, const Tensors& out)>;

struct Gpu {
  Stream stream{0};
  cuda::CudaHandles handles{0, stream.get()};
  ExecutionContext ctx;
  Gpu() {
    ctx.device = Device::cuda(0);
    ctx.stream = stream.get();
    ctx.handles = &handles;
  }
};

// The layout of a tensor of `shape`: `layout` for a 4-d one, NCHW (row-major) for every other rank.
Layout layout_for(const Shape& shape, Layout layout) { return shape.size() == 4 ? layout : Layout::NCHW; }

// A BF16 tensor of `shape` on ctx's device holding bf16(v) (v in NCHW order; stored in `layout`).
Tensor bf16_tensor(const ExecutionContext& ctx, const std::vector<float>& v, const Shape& shape,
                   Layout layout = Layout::NCHW) {
  const Tensor f = ops::to_layout(ctx, Tensor::from_vector(v, shape).to(ctx.device, ctx.stream),
                                  layout_for(shape, layout));
  Tensor b = Tensor::empty(shape, DType::BF16, ctx.device, ctx.stream, f.layout());
  ops::cast_to_bf16(ctx, f, b);
  return b;
}

Tensor poisoned(const ExecutionContext& ctx, const Shape& shape, DType dtype, Layout layout = Layout::NCHW) {
  Tensor t = Tensor::empty(shape, dtype, ctx.device, ctx.stream, layout_for(shape, layout));
  t.fill_bytes(0xFF, ctx.stream);
  return t;
}

std::vector<std::uint16_t> bits(const ExecutionContext& ctx, const Tensor& t) {
  const std::vector<bfloat16> v = t.to(Device::cpu(), ctx.stream).to_vector<bfloat16>();
  std::vector<std::uint16_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = v[i].bits;
  return b;
}

// A float32 tensor's values on the host (to_vector reads host memory only: a CUDA tensor is copied first).
std::vector<float> host_floats(const ExecutionContext& ctx, const Tensor& t) {
  return t.to(Device::cpu(), ctx.stream).to_vector<float>();
}

// Runs `op` on the bf16 inputs into fresh bf16 outputs (the bf16 kernels), and on float32 widenings into
// float32 outputs rounded afterwards (the float32 kernels); returns the two sets of output bits (4-d
// outputs in `layout`, both sets in the same memory order).
struct Outcome {
  std::vector<std::vector<std::uint16_t>> native, rounded;
};
Outcome run_both(const ExecutionContext& ctx, const Tensors& ins, const std::vector<Shape>& out_shapes,
                 const Op& op, Layout layout = Layout::NCHW) {
  Tensors native_out, float_in, float_out;
  for (const Shape& s : out_shapes) native_out.push_back(poisoned(ctx, s, DType::BF16, layout));
  op(ctx, ins, native_out);
  for (const Tensor& t : ins) float_in.push_back(ops::bf16::widened(ctx, t));
  for (const Shape& s : out_shapes) float_out.push_back(poisoned(ctx, s, DType::F32, layout));
  op(ctx, float_in, float_out);
  Outcome o;
  for (std::size_t i = 0; i < out_shapes.size(); ++i) {
    Tensor r = poisoned(ctx, out_shapes[i], DType::BF16, layout);
    ops::cast_to_bf16(ctx, float_out[i], r);
    o.native.push_back(bits(ctx, native_out[i]));
    o.rounded.push_back(bits(ctx, r));
  }
  return o;
}

void expect_equal(const Outcome& o, const char* what) {
  for (std::size_t i = 0; i < o.native.size(); ++i) {
    ASSERT_EQ(o.native[i].size(), o.rounded[i].size());
    for (std::size_t j = 0; j < o.native[i].size(); ++j) {
      ASSERT_EQ(o.native[i][j], o.rounded[i][j]) << what << ": output " << i << ", element " << j;
    }
  }
}

std::vector<float> values(std::size_t n, std::uint64_t seed) { return testing::random_floats(n, seed); }

TEST(CudaBf16Kernels, ElementwiseDropoutAndPoolingAreTheFloatKernelsRounded) {
  SKIP_WITHOUT_GPU();
  Gpu g;
  const ExecutionContext& ctx = g.ctx;
  for (const std::int64_t n : {1, 7, 8, 1001, 4099}) {
    const Shape s{n};
    const Tensor a = bf16_tensor(ctx, values(static_cast<std::size_t>(n), 1), s),
                 b = bf16_tensor(ctx, values(static_cast<std::size_t>(n), 2), s);
    expect_equal(run_both(ctx, {a}, {s},
                          [](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                            ops::relu_forward(c, in[0], out[0]);
                          }),
                 "relu_forward");
    expect_equal(run_both(ctx, {a, b}, {s},
                          [](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                            ops::relu_backward(c, in[0], in[1], out[0]);
                          }),
                 "relu_backward");
    expect_equal(run_both(ctx, {a, b}, {s},
                          [](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                            ops::residual_add(c, in[0], in[1], out[0]);
                          }),
                 "residual_add");
    expect_equal(run_both(ctx, {a}, {s},
                          [](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                            ops::dropout_forward(c, 0.3, 11, 5, in[0], out[0]);
                          }),
                 "dropout_forward");
    expect_equal(run_both(ctx, {a}, {s},
                          [](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                            ops::dropout_backward(c, 0.3, 11, 5, in[0], out[0]);
                          }),
                 "dropout_backward");
  }
  // A misaligned start (one element in): the scalar form of the vectorised kernels.
  const Tensor whole = bf16_tensor(ctx, values(1001, 3), {1001});
  const Tensor shifted = whole.flat_range(1, {1000});
  expect_equal(run_both(ctx, {shifted}, {{1000}},
                        [](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                          ops::relu_forward(c, in[0], out[0]);
                        }),
               "relu_forward, misaligned");

  // Pooling in both layouts (NHWC: the channels-last kernels, the same arithmetic).
  const Pool2dShape p{
      .n = 3, .c = 5, .h = 9, .w = 7, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  const Shape xs{p.n, p.c, p.h, p.w}, ys{p.n, p.c, p.p(), p.q()};
  for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
    SCOPED_TRACE(std::string(layout_name(layout)));
    const Tensor x = bf16_tensor(ctx, values(p.input_size(), 4), xs, layout),
                 dy = bf16_tensor(ctx, values(p.output_size(), 5), ys, layout);
    const Tensor argmax = Tensor::empty(ys, DType::I32, ctx.device, ctx.stream, layout);
    expect_equal(run_both(
                     ctx, {x}, {ys},
                     [&](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                       ops::maxpool2d_forward(c, p, in[0], out[0], argmax);
                     },
                     layout),
                 "maxpool2d_forward");
    expect_equal(run_both(
                     ctx, {dy}, {xs},
                     [&](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                       ops::maxpool2d_backward(c, p, in[0], argmax, out[0]);
                     },
                     layout),
                 "maxpool2d_backward");
    const Tensor pooled = bf16_tensor(ctx, values(static_cast<std::size_t>(p.n * p.c), 6), {p.n, p.c});
    expect_equal(run_both(
                     ctx, {x}, {{p.n, p.c}},
                     [](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                       ops::global_avgpool_forward(c, in[0], out[0]);
                     },
                     layout),
                 "global_avgpool_forward");
    expect_equal(run_both(
                     ctx, {pooled}, {xs},
                     [](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                       ops::global_avgpool_backward(c, in[0], out[0]);
                     },
                     layout),
                 "global_avgpool_backward");
    const AvgPool2dShape a{p, false};
    expect_equal(run_both(
                     ctx, {x}, {ys},
                     [&](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                       ops::avgpool2d_forward(c, a, in[0], out[0]);
                     },
                     layout),
                 "avgpool2d_forward");
    expect_equal(run_both(
                     ctx, {dy}, {xs},
                     [&](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                       ops::avgpool2d_backward(c, a, in[0], out[0]);
                     },
                     layout),
                 "avgpool2d_backward");
  }
}

TEST(CudaBf16Kernels, BatchNormTrainingEvalAndFusedReluAreTheFloatKernelsRounded) {
  SKIP_WITHOUT_GPU();
  Gpu g;
  const ExecutionContext& ctx = g.ctx;
  // One shape with several reduction chunks (M = 4*33*35 > 4096); both layouts (NHWC: the channels-last
  // reduction and elementwise passes).
  for (const auto& [shape, layout] :
       {std::pair{BatchNorm2dShape{.n = 3, .c = 5, .h = 7, .w = 9}, Layout::NCHW},
        std::pair{BatchNorm2dShape{.n = 4, .c = 3, .h = 33, .w = 35}, Layout::NCHW},
        std::pair{BatchNorm2dShape{.n = 3, .c = 37, .h = 7, .w = 9}, Layout::NHWC},
        std::pair{BatchNorm2dShape{.n = 4, .c = 3, .h = 33, .w = 35}, Layout::NHWC}}) {
    const BatchNorm2dShape s = shape;  // a variable, not a structured binding: the lambdas below capture it
    SCOPED_TRACE(std::string(layout_name(layout)) + " c=" + std::to_string(s.c));
    const Shape xs{s.n, s.c, s.h, s.w}, cs{s.c};
    const Tensor x = bf16_tensor(ctx, values(s.x_size(), 21), xs, layout),
                 dy = bf16_tensor(ctx, values(s.x_size(), 22), xs, layout);
    const auto param = [&](std::uint64_t seed) {
      return Tensor::from_vector(values(static_cast<std::size_t>(s.c), seed), cs).to(ctx.device, ctx.stream);
    };
    const Tensor gamma = param(23), beta = param(24);
    const auto positive = [&](std::uint64_t seed) {  // a running variance: |v| in [0.1, 1)
      std::vector<float> v = values(static_cast<std::size_t>(s.c), seed);
      for (float& e : v) e = std::fabs(e);
      return Tensor::from_vector(v, cs).to(ctx.device, ctx.stream);
    };
    for (const bool relu : {false, true}) {
      // Two sets of statistics and gradients, one per run, compared bitwise (float32 outputs).
      Tensors stats[2], grads[2];
      for (Tensors& t : stats) {
        t = {poisoned(ctx, cs, DType::F32), poisoned(ctx, cs, DType::F32), param(25), positive(26)};
      }
      for (Tensors& t : grads) t = {poisoned(ctx, cs, DType::F32), poisoned(ctx, cs, DType::F32)};
      int run = 0;
      const Outcome fwd = run_both(
          ctx, {x}, {xs},
          [&](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
            const Tensors& st = stats[run++];
            ops::batchnorm2d_forward_training(c, s, in[0], gamma, beta, out[0], st[0], st[1], st[2], st[3],
                                              0.1, 1e-5, relu);
          },
          layout);
      expect_equal(fwd, relu ? "batchnorm2d_forward_training + relu" : "batchnorm2d_forward_training");
      for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(host_floats(ctx, stats[0][i]), host_floats(ctx, stats[1][i])) << "statistic " << i;
      }
      // Backward with the fused output as the ReLU mask (bf16: the forward's bf16 output).
      const Tensor relu_y = relu ? bf16_tensor(ctx, values(s.x_size(), 27), xs, layout) : Tensor();
      run = 0;
      const Tensors bwd_in = relu ? Tensors{x, dy, relu_y} : Tensors{x, dy};
      const Outcome bwd = run_both(
          ctx, bwd_in, {xs},
          [&](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
            const Tensors& gr = grads[run];
            const Tensors& st = stats[run++];
            ops::batchnorm2d_backward_training(c, s, in[0], gamma, st[0], st[1], in[1], out[0], gr[0], gr[1],
                                               in.size() > 2 ? in[2] : Tensor());
          },
          layout);
      expect_equal(bwd, relu ? "batchnorm2d_backward_training + relu" : "batchnorm2d_backward_training");
      EXPECT_EQ(host_floats(ctx, grads[0][0]), host_floats(ctx, grads[1][0])) << "dgamma";
      EXPECT_EQ(host_floats(ctx, grads[0][1]), host_floats(ctx, grads[1][1])) << "dbeta";
      // Eval: the running statistics of the first run.
      expect_equal(run_both(
                       ctx, {x}, {xs},
                       [&](const ExecutionContext& c, const Tensors& in, const Tensors& out) {
                         ops::batchnorm2d_forward_eval(c, s, in[0], gamma, beta, stats[0][2], stats[0][3],
                                                       out[0], 1e-5, relu);
                       },
                       layout),
                   "batchnorm2d_forward_eval");
    }
  }
}

}  // namespace
}  // namespace engine
