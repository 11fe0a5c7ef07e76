// bf16 autocast (kernels/ops/autocast_bf16.h) on CUDA against the CPU emulation and the float64 reference:
// Conv2d and Linear forward and backward through the ops a model calls, with the handles cnn_train makes for
// --precision bf16, outputs poisoned first, odd sizes. CUDA runs bf16 tensor-core GEMMs (cuDNN's bf16
// configuration, cublasGemmEx CUDA_R_16BF), the CPU the exact fp32 emulation: both compute the same exact
// products and differ only in the fp32 accumulation order and, with a bias, CUDA's second rounding of y
// (the bias is added to the bf16 output), so each is within tests/common/bf16_tolerance.h's bound of the
// reference, and they are within twice it of each other. The convolution also in NHWC (channels last).
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda_check.h"
#include "core/stream.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/linear.h"
#include "kernels/cuda/conv2d_cudnn_plan.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/sgd.h"
#include "kernels/ops/cast.h"
#include "kernels/ops/conv2d.h"
#include "kernels/ops/linear.h"
#include "kernels/ops/transpose.h"
#include "tests/common/bf16_tolerance.h"
#include "tests/common/gpu.h"
#include "tests/common/test_data.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using testing::bf16_matches;
using testing::bf16_rounded;
using testing::random_floats;

// The operands of one op on one device: x, w and its bf16 mirror, bias, dy, and NaN-poisoned outputs.
struct Operands {
  Tensor x, w, mirror, b, dy, y, dx, dw, db;
};

Operands operands(const ExecutionContext& ctx, const std::vector<float>& x, const std::vector<float>& w,
                  const std::vector<float>& b, const std::vector<float>& dy, std::size_t y_size) {
  auto put = [&](const std::vector<float>& v) {
    return Tensor::from_vector(v, {static_cast<std::int64_t>(v.size())}).to(ctx.device, ctx.stream);
  };
  auto poisoned = [&](std::size_t n) {
    Tensor t = Tensor::empty({static_cast<std::int64_t>(n)}, DType::F32, ctx.device, ctx.stream);
    t.fill_bytes(0xFF, ctx.stream);
    return t;
  };
  Operands o{put(x),
             put(w),
             Tensor(),
             b.empty() ? Tensor() : put(b),
             put(dy),
             poisoned(y_size),
             poisoned(x.size()),
             poisoned(w.size()),
             b.empty() ? Tensor() : poisoned(b.size())};
  o.mirror = Tensor::empty({o.w.numel()}, DType::BF16, ctx.device, ctx.stream);
  ops::cast_to_bf16(ctx, o.w, o.mirror);
  return o;
}

std::vector<float> host(const Tensor& t, void* stream) {
  return cuda_test::to_host<float>(t, static_cast<cudaStream_t>(stream));
}

struct GpuContext {
  Stream stream{0};
  cuda::CudaHandles handles{0, stream.get(), cuda::training_handles_options(false, /*allow_tf32=*/true)};
  ExecutionContext ctx;
  GpuContext() {
    ctx.device = Device::cuda(0);
    ctx.stream = stream.get();
    ctx.handles = &handles;
    ctx.allow_tf32 = true;
    ctx.autocast_bf16 = true;
  }
};

ExecutionContext cpu_bf16() {
  ExecutionContext c;
  c.autocast_bf16 = true;
  return c;
}

class CudaBf16Conv2d : public ::testing::TestWithParam<Conv2dShape> {};

TEST_P(CudaBf16Conv2d, MatchesTheCpuEmulationAndTheReference) {
  SKIP_WITHOUT_GPU();
  const Conv2dShape s = GetParam();
  const std::vector<float> x = random_floats(s.x_size(), 41), w = random_floats(s.w_size(), 42),
                           b = random_floats(static_cast<std::size_t>(s.k), 43),
                           dy = random_floats(s.y_size(), 44);
  const std::vector<double> xr = bf16_rounded(x), wr = bf16_rounded(w), dyr = bf16_rounded(dy);
  const std::vector<double> bd = bf16_rounded(b);
  const auto xa = testing::abs_values(xr), wa = testing::abs_values(wr), dya = testing::abs_values(dyr),
             ba = testing::abs_values(bd);
  std::vector<double> y_ref(s.y_size()), y_mag(s.y_size()), dx_ref(s.x_size()), dx_mag(s.x_size()),
      dw_ref(s.w_size()), dw_mag(s.w_size()), db_ref(b.size()), db_mag(b.size());
  cpu::conv2d_forward<double>(s, xr.data(), wr.data(), bd.data(), y_ref.data());
  cpu::conv2d_forward<double>(s, xa.data(), wa.data(), ba.data(), y_mag.data());
  cpu::conv2d_backward<double>(s, xr.data(), wr.data(), dyr.data(), dx_ref.data(), dw_ref.data(),
                               db_ref.data());
  cpu::conv2d_backward<double>(s, xa.data(), wa.data(), dya.data(), dx_mag.data(), dw_mag.data(),
                               db_mag.data());

  GpuContext gpu;
  const ExecutionContext cpu = cpu_bf16();
  const Operands g = operands(gpu.ctx, x, w, b, dy, s.y_size()), c = operands(cpu, x, w, b, dy, s.y_size());
  const auto run = [&s](const ExecutionContext& ctx, const Operands& o) {
    ops::conv2d_forward(ctx, s, o.x, o.w, o.b, o.y, o.mirror);
    ops::conv2d_backward(ctx, s, o.x, o.w, o.dy, o.dx, o.dw, o.db, o.mirror);
  };
  run(gpu.ctx, g);
  run(cpu, c);
  const std::int64_t per_y = static_cast<std::int64_t>(s.c) * s.r * s.s + 1,
                     per_dx = static_cast<std::int64_t>(s.k) * s.r * s.s,
                     per_dw = static_cast<std::int64_t>(s.n) * s.p() * s.q();
  const std::vector<float> gy = host(g.y, gpu.ctx.stream), gdx = host(g.dx, gpu.ctx.stream),
                           gdw = host(g.dw, gpu.ctx.stream), gdb = host(g.db, gpu.ctx.stream);
  EXPECT_TRUE(bf16_matches(gy, y_ref, y_mag, per_y, true, 1.0, /*rounded_twice=*/true)) << "y";
  EXPECT_TRUE(bf16_matches(gdx, dx_ref, dx_mag, per_dx, true)) << "dx";
  EXPECT_TRUE(bf16_matches(gdw, dw_ref, dw_mag, per_dw, true)) << "dw";
  EXPECT_TRUE(bf16_matches(gdb, db_ref, db_mag, per_dw, true)) << "db";
  // GPU against the CPU emulation: each within the bound of the reference, so within twice it of each other.
  const auto widened = [](const Tensor& t) {
    const std::vector<float> v = t.to_vector<float>();
    return std::vector<double>(v.begin(), v.end());
  };
  EXPECT_TRUE(bf16_matches(gy, widened(c.y), y_mag, per_y, true, 2.0, /*rounded_twice=*/true)) << "y vs CPU";
  EXPECT_TRUE(bf16_matches(gdx, widened(c.dx), dx_mag, per_dx, true, 2.0)) << "dx vs CPU";
  EXPECT_TRUE(bf16_matches(gdw, widened(c.dw), dw_mag, per_dw, true, 2.0)) << "dw vs CPU";

  // bf16 activation storage: x and dy given as BF16 tensors, y and dx written as BF16 (what a model under
  // autocast passes) run the same cuDNN calls on the same bf16 operands as the float32 tensors above (cast
  // first, results widened after): bitwise the same results.
  const auto as_bf16 = [&](const Tensor& t) {
    Tensor out = Tensor::empty(t.shape(), DType::BF16, t.device(), gpu.ctx.stream);
    ops::cast_to_bf16(gpu.ctx, t, out);
    return out;
  };
  const Tensor xb = as_bf16(g.x), dyb = as_bf16(g.dy);
  Tensor yb = Tensor::empty({static_cast<std::int64_t>(s.y_size())}, DType::BF16, gpu.ctx.device,
                            gpu.ctx.stream),
         dxb = Tensor::empty({static_cast<std::int64_t>(s.x_size())}, DType::BF16, gpu.ctx.device,
                             gpu.ctx.stream);
  Tensor dw2 = Tensor::empty(g.dw.shape(), DType::F32, gpu.ctx.device, gpu.ctx.stream),
         db2 = Tensor::empty(g.db.shape(), DType::F32, gpu.ctx.device, gpu.ctx.stream);
  ops::conv2d_forward(gpu.ctx, s, xb, g.w, g.b, yb, g.mirror);
  ops::conv2d_backward(gpu.ctx, s, xb, g.w, dyb, dxb, dw2, db2, g.mirror);
  const auto widened_gpu = [&](const Tensor& t) {
    Tensor f = Tensor::empty(t.shape(), DType::F32, t.device(), gpu.ctx.stream);
    ops::cast_from_bf16_scaled(gpu.ctx, t, f, 1.0f);
    return host(f, gpu.ctx.stream);
  };
  EXPECT_TRUE(cuda_test::bitwise_equal(widened_gpu(yb), gy)) << "y from bf16 storage";
  EXPECT_TRUE(cuda_test::bitwise_equal(widened_gpu(dxb), gdx)) << "dx from bf16 storage";
  EXPECT_TRUE(cuda_test::bitwise_equal(host(dw2, gpu.ctx.stream), gdw)) << "dw from bf16 storage";
  EXPECT_TRUE(cuda_test::bitwise_equal(host(db2, gpu.ctx.stream), gdb)) << "db from bf16 storage";

  // NHWC (channels last): cuDNN's bf16 configuration with NHWC descriptors, the mirror transposed to
  // [K, R, S, C] per call and dW transposed back. Other algorithms, the same exact products summed in
  // another fp32 order: the same bounds against the reference. x and dy are BF16 NHWC tensors (what an NHWC
  // model passes); y and dx come back NHWC and are compared after a transpose to NCHW (exact).
  const Shape xs{s.n, s.c, s.h, s.w}, ys{s.n, s.k, s.p(), s.q()};
  const auto nhwc_bf16 = [&](const Tensor& flat, const Shape& shape) {
    return ops::to_layout(gpu.ctx, as_bf16(flat.view(shape)), Layout::NHWC);
  };
  const auto poisoned_nhwc = [&](const Shape& shape) {
    Tensor t = Tensor::empty(shape, DType::BF16, gpu.ctx.device, gpu.ctx.stream, Layout::NHWC);
    t.fill_bytes(0xFF, gpu.ctx.stream);
    return t;
  };
  const Tensor xn = nhwc_bf16(g.x, xs), dyn = nhwc_bf16(g.dy, ys);
  const Tensor yn = poisoned_nhwc(ys), dxn = poisoned_nhwc(xs);
  Tensor dw3 = Tensor::empty(g.dw.shape(), DType::F32, gpu.ctx.device, gpu.ctx.stream),
         db3 = Tensor::empty(g.db.shape(), DType::F32, gpu.ctx.device, gpu.ctx.stream);
  dw3.fill_bytes(0xFF, gpu.ctx.stream);
  db3.fill_bytes(0xFF, gpu.ctx.stream);
  ops::conv2d_forward(gpu.ctx, s, xn, g.w, g.b, yn, g.mirror);
  ops::conv2d_backward(gpu.ctx, s, xn, g.w, dyn, dxn, dw3, db3, g.mirror);
  const auto nchw_values = [&](const Tensor& t) {
    return widened_gpu(ops::to_layout(gpu.ctx, t, Layout::NCHW));
  };
  EXPECT_TRUE(bf16_matches(nchw_values(yn), y_ref, y_mag, per_y, true, 1.0, /*rounded_twice=*/true))
      << "y, NHWC";
  EXPECT_TRUE(bf16_matches(nchw_values(dxn), dx_ref, dx_mag, per_dx, true)) << "dx, NHWC";
  EXPECT_TRUE(bf16_matches(host(dw3, gpu.ctx.stream), dw_ref, dw_mag, per_dw, true)) << "dw, NHWC";
  EXPECT_TRUE(bf16_matches(host(db3, gpu.ctx.stream), db_ref, db_mag, per_dw, true)) << "db, NHWC";
}

INSTANTIATE_TEST_SUITE_P(OddSizes, CudaBf16Conv2d,
                         ::testing::Values(Conv2dShape{.n = 3,
                                                       .c = 5,
                                                       .h = 9,
                                                       .w = 7,
                                                       .k = 6,
                                                       .r = 3,
                                                       .s = 3,
                                                       .stride_h = 2,
                                                       .stride_w = 2,
                                                       .pad_h = 1,
                                                       .pad_w = 1},
                                           Conv2dShape{.n = 2,
                                                       .c = 17,
                                                       .h = 11,
                                                       .w = 13,
                                                       .k = 9,
                                                       .r = 3,
                                                       .s = 3,
                                                       .stride_h = 1,
                                                       .stride_w = 1,
                                                       .pad_h = 1,
                                                       .pad_w = 1}));

// The algorithms chosen for a bf16 convolution run with a math type that permits tensor cores in all three
// directions, in both layouts: the search runs with tensor-op math on the descriptor (handles.h,
// cudnn_search_math_type) and cuDNN reports, per candidate, the math type it measured it with: TENSOR_OP or
// DEFAULT. For bf16 data on sm_80 and later DEFAULT permits tensor cores too (cuDNN's cudnnMathType_t;
// PyTorch runs its bf16 convolutions under DEFAULT), and cuDNN 9.19 on an H200 reports DEFAULT for the NCHW
// forward and both backward-filter choices. What must never be chosen: FMA (no tensor cores) and
// ALLOW_CONVERSION (operands converted to another reduced type: not autocast's arithmetic; acceptable()
// refuses it). Skipped below sm_80, where DEFAULT means no tensor cores and bf16 convolutions do not run.
TEST(CudaBf16Conv2d, ChosenAlgorithmsPermitTensorCoresAndNeverConvert) {
  SKIP_WITHOUT_GPU();
  int major = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 8) GTEST_SKIP() << "bf16 tensor cores need sm_80 or later; this device is sm_" << major << "x";
  const Conv2dShape s = testing::square_conv(8, 16, 16, 16, 32, 3, 1, 1);
  const Shape xs{s.n, s.c, s.h, s.w}, ys{s.n, s.k, s.p(), s.q()};
  GpuContext gpu;
  // bf16 activations in `layout`, as a --precision bf16 model passes them.
  const auto bf16_tensor = [&](std::size_t size, std::uint64_t seed, const Shape& shape, Layout layout) {
    const Tensor f = Tensor::from_vector(random_floats(size, seed), shape).to(gpu.ctx.device, gpu.ctx.stream);
    Tensor b = Tensor::empty(shape, DType::BF16, gpu.ctx.device, gpu.ctx.stream);
    ops::cast_to_bf16(gpu.ctx, f, b);
    return layout == Layout::NHWC ? ops::to_layout(gpu.ctx, b, Layout::NHWC) : b;
  };
  const Operands o = operands(gpu.ctx, random_floats(s.x_size(), 51), random_floats(s.w_size(), 52), {},
                              random_floats(s.y_size(), 53), s.y_size());
  for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
    const Tensor x = bf16_tensor(s.x_size(), 54, xs, layout), dy = bf16_tensor(s.y_size(), 55, ys, layout);
    Tensor y = Tensor::empty(ys, DType::BF16, gpu.ctx.device, gpu.ctx.stream, layout),
           dx = Tensor::empty(xs, DType::BF16, gpu.ctx.device, gpu.ctx.stream, layout),
           dw = Tensor::empty(o.w.shape(), DType::F32, gpu.ctx.device, gpu.ctx.stream), db;
    ops::conv2d_forward(gpu.ctx, s, x, o.w, Tensor(), y, o.mirror);
    ops::conv2d_backward(gpu.ctx, s, x, o.w, dy, dx, dw, db, o.mirror);
    CUDA_CHECK(cudaStreamSynchronize(gpu.stream.get()));
    const auto& plans = gpu.handles.conv_plans().plans;
    const auto it = plans.find(cuda::detail::conv_key(s, CUDNN_DATA_BFLOAT16, layout));
    ASSERT_NE(it, plans.end()) << "no bf16 plan for the shape in " << layout_name(layout);
    const cuda::detail::CudnnConvPlan& plan = *it->second;
    const auto permits_tensor_cores = [](cudnnMathType_t m) {
      return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_DEFAULT_MATH;
    };
    EXPECT_PRED1(permits_tensor_cores, plan.forward.math_type) << layout_name(layout) << " forward";
    EXPECT_PRED1(permits_tensor_cores, plan.backward_data.math_type)
        << layout_name(layout) << " backward data";
    EXPECT_PRED1(permits_tensor_cores, plan.backward_filter.math_type)
        << layout_name(layout) << " backward filter";
  }
}

TEST(CudaBf16Linear, MatchesTheCpuEmulationAndTheReference) {
  SKIP_WITHOUT_GPU();
  const LinearShape s{.n = 33, .in_features = 301, .out_features = 11};
  const std::vector<float> x = random_floats(s.x_size(), 51), w = random_floats(s.w_size(), 52),
                           b = random_floats(11, 53), dy = random_floats(s.y_size(), 54);
  const std::vector<double> xr = bf16_rounded(x), wr = bf16_rounded(w), dyr = bf16_rounded(dy);
  const std::vector<double> bd = bf16_rounded(b);
  const auto xa = testing::abs_values(xr), wa = testing::abs_values(wr), dya = testing::abs_values(dyr),
             ba = testing::abs_values(bd);
  std::vector<double> y_ref(s.y_size()), y_mag(s.y_size()), dx_ref(s.x_size()), dx_mag(s.x_size()),
      dw_ref(s.w_size()), dw_mag(s.w_size()), db_ref(11), db_mag(11);
  cpu::linear_forward<double>(s, xr.data(), wr.data(), bd.data(), y_ref.data());
  cpu::linear_forward<double>(s, xa.data(), wa.data(), ba.data(), y_mag.data());
  cpu::linear_backward<double>(s, xr.data(), wr.data(), dyr.data(), dx_ref.data(), dw_ref.data(),
                               db_ref.data());
  cpu::linear_backward<double>(s, xa.data(), wa.data(), dya.data(), dx_mag.data(), dw_mag.data(),
                               db_mag.data());

  GpuContext gpu;
  const ExecutionContext cpu = cpu_bf16();
  const Operands g = operands(gpu.ctx, x, w, b, dy, s.y_size()), c = operands(cpu, x, w, b, dy, s.y_size());
  const auto run = [&s](const ExecutionContext& ctx, const Operands& o) {
    ops::linear_forward(ctx, s, o.x, o.w, o.b, o.y, o.mirror);
    ops::linear_backward(ctx, s, o.x, o.w, o.dy, o.dx, o.dw, o.db, o.mirror);
  };
  run(gpu.ctx, g);
  run(cpu, c);
  const std::vector<float> gy = host(g.y, gpu.ctx.stream), gdx = host(g.dx, gpu.ctx.stream),
                           gdw = host(g.dw, gpu.ctx.stream), gdb = host(g.db, gpu.ctx.stream);
  EXPECT_TRUE(bf16_matches(gy, y_ref, y_mag, s.in_features + 1, true, 1.0, /*rounded_twice=*/true)) << "y";
  EXPECT_TRUE(bf16_matches(gdx, dx_ref, dx_mag, s.out_features, true)) << "dx";
  EXPECT_TRUE(bf16_matches(gdw, dw_ref, dw_mag, s.n, true)) << "dw";
  EXPECT_TRUE(bf16_matches(gdb, db_ref, db_mag, s.n, true)) << "db";
  const std::vector<float> cy = c.y.to_vector<float>();
  EXPECT_TRUE(bf16_matches(gy, std::vector<double>(cy.begin(), cy.end()), y_mag, s.in_features + 1, true, 2.0,
                           /*rounded_twice=*/true))
      << "y vs CPU";
}

// The fused SGD's bf16 mirror: after each step it holds the bf16 rounding of every new parameter, and the
// parameters are the ones a step without a mirror gives (cpu::sgd_step<float>, which the kernel equals
// bitwise: tests/gpu/cuda_sgd_test.cpp). Both launch forms: 128-bit (aligned, with a tail) and scalar (one
// element off alignment).
TEST(CudaBf16Mirror, TheFusedSgdWritesTheRoundedParameters) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const cpu::SgdOptions o{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4};
  for (const std::int64_t skew : {0, 1}) {
    const std::int64_t n = 1001;
    std::vector<float> params = random_floats(static_cast<std::size_t>(n), 61), buffer(n, 0.0f);
    Tensor params_d = cuda_test::to_device(params, s), buffer_d = cuda_test::poisoned<float>(n, s);
    Tensor mirror_d = Tensor::empty({n + skew}, DType::BF16, Device::cuda(0), s);
    mirror_d.fill_bytes(0xFF, s);
    for (int step = 0; step < 3; ++step) {
      const std::vector<float> grads =
          random_floats(static_cast<std::size_t>(n), 70 + static_cast<std::uint64_t>(step));
      Tensor grads_d = cuda_test::to_device(grads, s);
      cpu::sgd_step(o, params.data(), grads.data(), buffer.data(), n, step == 0);
      cuda::sgd_step(s, o, params_d.data<float>(), grads_d.data<float>(), buffer_d.data<float>(), n,
                     step == 0, mirror_d.data<bfloat16>() + skew);
      ASSERT_TRUE(cuda_test::bitwise_equal(cuda_test::to_host<float>(params_d, s), params))
          << "step " << step;
      const std::vector<bfloat16> mirror = cuda_test::to_host<bfloat16>(mirror_d, s);
      for (std::int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(mirror[static_cast<std::size_t>(i + skew)].bits,
                  to_bfloat16(params[static_cast<std::size_t>(i)]).bits)
            << "element " << i << " after step " << step << " (skew " << skew << ")";
      }
    }
  }
}

}  // namespace
}  // namespace engine
