// The CPU's bf16 kernels (bf16 autocast's activation storage, kernels/ops/bf16_storage.h): ReLU, the residual
// add, max pooling and BatchNorm (with its fused ReLU) read and write BF16 tensors directly
// (kernels/cpu_fast/bf16_io.h) instead of running on float32 copies. Each op is called through kernels/ops on
// BF16 CPU tensors, odd sizes, every output poisoned (NaN) first, and checked two ways:
//  - bitwise: the float32 fast kernel on the widened inputs, its bf16 outputs rounded once (nearest even):
//    what the float32-copies path gave, so the bf16 kernels change no result;
//  - against the float64 reference (kernels/cpu) on the widened inputs. The float32 kernel's value f is
//    within 2^-24 |ref| + a of ref (one float rounding of a double result; a the double sums' order, below),
//    and bf16's rounding adds 2^-8 |f|: |got - ref| <= (2^-8 + 2^-24 + 2^-32) |ref| + (1 + 2^-8) a, taken as
//    (2^-8 + 2^-23) |ref| + 2a. Float32 outputs (statistics, dgamma, dbeta): 2^-23 |ref| + 2a.
//    a: BatchNorm's double sums of M = N*H*W terms, each below 8 in magnitude here (|x|, |dy| < 1,
//    |gamma| < 2, invstd below 2 in training and 3.2 in eval for these inputs' spread and running
//    variances), are within M 2^-53 * 8M = M^2 2^-50 = a of exact; the other ops have no sums (a = 0).
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/tensor.h"
#include "kernels/cpu/batchnorm2d.h"
#include "kernels/cpu/maxpool2d.h"
#include "kernels/cpu/relu.h"
#include "kernels/cpu/residual_add.h"
#include "kernels/cpu_fast/batchnorm2d.h"
#include "kernels/cpu_fast/maxpool2d.h"
#include "kernels/cpu_fast/relu.h"
#include "kernels/cpu_fast/residual_add.h"
#include "kernels/ops/batchnorm2d.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/cast.h"
#include "kernels/ops/maxpool2d.h"
#include "kernels/ops/relu.h"
#include "kernels/ops/residual_add.h"
#include "tests/common/bf16_tolerance.h"

namespace engine {
namespace {

using testing::bf16_value;
using testing::kBf16Rounding;
using testing::random_floats;

const ExecutionContext kCtx;

Tensor bf16_of(const std::vector<float>& v, const Shape& shape) {
  const Tensor f = Tensor::from_vector(v, shape);
  Tensor b = Tensor::empty(shape, DType::BF16);
  ops::cast_to_bf16(kCtx, f, b);
  return b;
}

Tensor poisoned(const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  t.fill_bytes(0xFF, nullptr);  // NaN in float32 and bf16: an element not written fails both checks
  return t;
}

std::vector<float> values(const Tensor& t) { return ops::bf16::widened(kCtx, t).to_vector<float>(); }

std::vector<double> doubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

std::vector<float> rounded(std::vector<float> v) {
  for (float& x : v) x = bf16_value(x);
  return v;
}

// got (a bf16 output, widened) against the float32 kernel's output and the float64 reference (header).
void expect_bf16_output(const char* what, const std::vector<float>& got, const std::vector<float>& f32,
                        const std::vector<double>& ref, double a) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], bf16_value(f32[i])) << what << " at " << i;
    const double tol = (kBf16Rounding + 0x1p-23) * std::fabs(ref[i]) + 2 * a;
    ASSERT_LE(std::fabs(static_cast<double>(got[i]) - ref[i]), tol) << what << " at " << i;
  }
}

// A float32 output of a bf16 kernel: the float32 kernel's bits, and within 2^-23 |ref| + 2a of ref.
void expect_f32_output(const char* what, const std::vector<float>& got, const std::vector<float>& f32,
                       const std::vector<double>& ref, double a) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], f32[i]) << what << " at " << i;
    ASSERT_LE(std::fabs(static_cast<double>(got[i]) - ref[i]), 0x1p-23 * std::fabs(ref[i]) + 2 * a)
        << what << " at " << i;
  }
}

TEST(CpuBf16Kernels, AllCpuBf16TensorsTakeTheBf16KernelsAndMixesTheFloat32Copies) {
  const Tensor b = Tensor::empty({3}, DType::BF16), f = Tensor::empty({3}, DType::F32);
  bool ran = false;
  const auto op = [&](const Tensor*, const Tensor*) { ran = true; };
  EXPECT_FALSE(ops::bf16::on_float32(kCtx, {b}, {b}, op, ops::bf16::NativeBf16::CudaAndCpu));
  EXPECT_FALSE(ran);
  EXPECT_TRUE(ops::bf16::on_float32(kCtx, {b}, {b}, op, ops::bf16::NativeBf16::Cuda));  // CUDA-only kernel
  EXPECT_TRUE(ran);
  ran = false;
  EXPECT_TRUE(ops::bf16::on_float32(kCtx, {f, b}, {b}, op, ops::bf16::NativeBf16::CudaAndCpu));
  EXPECT_TRUE(ran);
}

TEST(CpuBf16Kernels, ReluAndResidualAdd) {
  // 1001: one thread, a vector tail; 70001: above kParallelMinElements, the threaded loop.
  for (const std::int64_t n : {std::int64_t{1001}, std::int64_t{70001}}) {
    const auto count = static_cast<std::size_t>(n);
    const Tensor x = bf16_of(random_floats(count, 11), {n}), dy = bf16_of(random_floats(count, 12), {n});
    const Tensor y = poisoned({n}, DType::BF16), dx = poisoned({n}, DType::BF16),
                 sum = poisoned({n}, DType::BF16);
    ops::relu_forward(kCtx, x, y);
    ops::relu_backward(kCtx, x, dy, dx);
    ops::residual_add(kCtx, x, dy, sum);
    const std::vector<float> xv = values(x), dyv = values(dy);
    std::vector<float> fy(count), fdx(count), fsum(count);
    cpu_fast::relu_forward(xv.data(), fy.data(), n);
    cpu_fast::relu_backward(xv.data(), dyv.data(), fdx.data(), n);
    cpu_fast::residual_add_forward(xv.data(), dyv.data(), fsum.data(), n);
    std::vector<double> ry(count), rdx(count), rsum(count);
    const std::vector<double> xd = doubles(xv), dyd = doubles(dyv);
    cpu::relu_forward<double>(xd.data(), ry.data(), n);
    cpu::relu_backward<double>(xd.data(), dyd.data(), rdx.data(), n);
    cpu::residual_add_forward<double>(xd.data(), dyd.data(), rsum.data(), n);
    expect_bf16_output("relu y", values(y), fy, ry, 0.0);
    expect_bf16_output("relu dx", values(dx), fdx, rdx, 0.0);
    expect_bf16_output("residual_add y", values(sum), fsum, rsum, 0.0);
  }
}

// Max pooling: the 2x2 stride-2 kernel (the zoo's) and the generic loop with overlapping windows, whose
// backward sums two or more dy into one cell.
TEST(CpuBf16Kernels, MaxPool) {
  Pool2dShape fast{
      .n = 3, .c = 5, .h = 10, .w = 14, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  Pool2dShape overlap = fast;  // 3x3 windows, stride 2, padding 1 on 9x11
  overlap.h = 9;
  overlap.w = 11;
  overlap.kernel_h = overlap.kernel_w = 3;
  overlap.pad_h = overlap.pad_w = 1;
  for (const Pool2dShape& s : {fast, overlap}) {
    const Shape in{s.n, s.c, s.h, s.w}, out{s.n, s.c, s.p(), s.q()};
    const auto in_n = static_cast<std::size_t>(s.input_size()),
               out_n = static_cast<std::size_t>(s.output_size());
    const Tensor x = bf16_of(random_floats(in_n, 21), in), dy = bf16_of(random_floats(out_n, 22), out);
    const Tensor y = poisoned(out, DType::BF16), dx = poisoned(in, DType::BF16),
                 argmax = poisoned(out, DType::I32);
    ops::maxpool2d_forward(kCtx, s, x, y, argmax);
    ops::maxpool2d_backward(kCtx, s, dy, argmax, dx);
    const std::vector<float> xv = values(x), dyv = values(dy);
    std::vector<float> fy(out_n), fdx(in_n);
    std::vector<std::int32_t> fam(out_n), ram(out_n);
    cpu_fast::maxpool2d_forward(s, xv.data(), fy.data(), fam.data());
    cpu_fast::maxpool2d_backward(s, dyv.data(), fam.data(), fdx.data());
    std::vector<double> ry(out_n), rdx(in_n);
    const std::vector<double> xd = doubles(xv), dyd = doubles(dyv);
    cpu::maxpool2d_forward<double>(s, xd.data(), ry.data(), ram.data());
    cpu::maxpool2d_backward<double>(s, dyd.data(), ram.data(), rdx.data());
    EXPECT_EQ(argmax.to_vector<std::int32_t>(), ram);
    expect_bf16_output("maxpool y", values(y), fy, ry, 0.0);
    expect_bf16_output("maxpool dx", values(dx), fdx, rdx, 0.0);
  }
}

struct BnCase {
  BatchNorm2dShape s;
  bool relu;
};

class CpuBf16BatchNorm : public ::testing::TestWithParam<BnCase> {
 protected:
  // dy as the reference's BatchNorm backward takes it: masked by ReLU's backward on the stored fused output.
  std::vector<double> reference_dy(const std::vector<float>& dyv, const Tensor& y) const {
    std::vector<double> dyd = doubles(dyv);
    if (relu) {
      const std::vector<double> stored_y = doubles(values(y));
      cpu::relu_backward<double>(stored_y.data(), dyd.data(), dyd.data(), static_cast<std::int64_t>(n));
    }
    return dyd;
  }

  const BatchNorm2dShape s = GetParam().s;
  const bool relu = GetParam().relu;
  const std::size_t n = s.x_size(), c = static_cast<std::size_t>(s.c);
  const Shape shape{s.n, s.c, s.h, s.w}, per_c{s.c};
  const double m = static_cast<double>(s.count()), a = m * m * 0x1p-50;  // a: the header's
};

TEST_P(CpuBf16BatchNorm, TrainingForwardAndBackward) {
  std::vector<float> gamma = random_floats(c, 31), beta = random_floats(c, 32);
  for (float& g : gamma) g *= 2.0f;
  const Tensor x = bf16_of(random_floats(n, 33), shape), dy = bf16_of(random_floats(n, 34), shape);
  const Tensor g = Tensor::from_vector(gamma, per_c), b = Tensor::from_vector(beta, per_c);
  const Tensor y = poisoned(shape, DType::BF16), dx = poisoned(shape, DType::BF16);
  const Tensor mean = poisoned(per_c, DType::F32), invstd = poisoned(per_c, DType::F32);
  const Tensor dgamma = poisoned(per_c, DType::F32), dbeta = poisoned(per_c, DType::F32);
  const Tensor rm = Tensor::zeros(per_c, DType::F32),
               rv = Tensor::from_vector(std::vector<float>(c, 1.0f), per_c);
  ops::batchnorm2d_forward_training(kCtx, s, x, g, b, y, mean, invstd, rm, rv, 0.1, 1e-5, relu);
  ops::batchnorm2d_backward_training(kCtx, s, x, g, mean, invstd, dy, dx, dgamma, dbeta, relu ? y : Tensor());

  // The float32 kernel on the widened tensors.
  const std::vector<float> xv = values(x), dyv = values(dy);
  std::vector<float> fy(n), fmean(c), finv(c), frm(c, 0.0f), frv(c, 1.0f), fdx(n), fdg(c), fdb(c);
  cpu_fast::batchnorm2d_forward_training(s, xv.data(), gamma.data(), beta.data(), fy.data(), fmean.data(),
                                         finv.data(), frm.data(), frv.data(), 0.1, 1e-5, relu);
  const std::vector<float> fy_stored = rounded(fy);  // what the backward reads as relu_y
  cpu_fast::batchnorm2d_backward_training(s, xv.data(), gamma.data(), fmean.data(), finv.data(), dyv.data(),
                                          fdx.data(), fdg.data(), fdb.data(),
                                          relu ? fy_stored.data() : nullptr);

  // The float64 reference on the same values (the backward from the saved float statistics, as the op).
  const std::vector<double> xd = doubles(xv), gd = doubles(gamma), bd = doubles(beta);
  std::vector<double> ry(n), rmean(c), rinv(c), rrm(c, 0.0), rrv(c, 1.0), rdx(n), rdg(c), rdb(c);
  cpu::batchnorm2d_forward_training<double>(s, xd.data(), gd.data(), bd.data(), ry.data(), rmean.data(),
                                            rinv.data(), rrm.data(), rrv.data(), 0.1, 1e-5);
  if (relu) cpu::relu_forward<double>(ry.data(), ry.data(), static_cast<std::int64_t>(n));
  const std::vector<double> dyd = reference_dy(dyv, y);
  const std::vector<double> md = doubles(mean.to_vector<float>()), id = doubles(invstd.to_vector<float>());
  cpu::batchnorm2d_backward_training<double>(s, xd.data(), gd.data(), md.data(), id.data(), dyd.data(),
                                             rdx.data(), rdg.data(), rdb.data());

  expect_bf16_output("y", values(y), fy, ry, a);
  expect_f32_output("save_mean", mean.to_vector<float>(), fmean, rmean, a);
  // invstd = (var + eps)^-1/2 moves by invstd * a / (2 var) when var moves by a: below 20a here (invstd < 2,
  // var > 0.05 for values of magnitude 0.1 to 1).
  expect_f32_output("save_invstd", invstd.to_vector<float>(), finv, rinv, 20 * a);
  expect_f32_output("running_mean", rm.to_vector<float>(), frm, rrm, a);
  expect_f32_output("running_var", rv.to_vector<float>(), frv, rrv, a);
  expect_bf16_output("dx", values(dx), fdx, rdx, a);
  expect_f32_output("dgamma", dgamma.to_vector<float>(), fdg, rdg, a);
  expect_f32_output("dbeta", dbeta.to_vector<float>(), fdb, rdb, a);
}

TEST_P(CpuBf16BatchNorm, EvalForwardAndBackward) {
  const std::vector<float> gamma = random_floats(c, 41), beta = random_floats(c, 42),
                           rmean = random_floats(c, 43);
  std::vector<float> rvar = random_floats(c, 44);
  for (float& v : rvar) v = std::fabs(v);
  const Tensor x = bf16_of(random_floats(n, 45), shape), dy = bf16_of(random_floats(n, 46), shape);
  const Tensor g = Tensor::from_vector(gamma, per_c), b = Tensor::from_vector(beta, per_c);
  const Tensor rm = Tensor::from_vector(rmean, per_c), rv = Tensor::from_vector(rvar, per_c);
  const Tensor y = poisoned(shape, DType::BF16), dx = poisoned(shape, DType::BF16);
  const Tensor dgamma = poisoned(per_c, DType::F32), dbeta = poisoned(per_c, DType::F32);
  ops::batchnorm2d_forward_eval(kCtx, s, x, g, b, rm, rv, y, 1e-5, relu);
  ops::batchnorm2d_backward_eval(kCtx, s, x, g, rm, rv, dy, dx, dgamma, dbeta, 1e-5, relu ? y : Tensor());

  const std::vector<float> xv = values(x), dyv = values(dy);
  std::vector<float> fy(n), fdx(n), fdg(c), fdb(c);
  cpu_fast::batchnorm2d_forward_eval(s, xv.data(), gamma.data(), beta.data(), rmean.data(), rvar.data(),
                                     fy.data(), 1e-5, relu);
  const std::vector<float> fy_stored = rounded(fy);
  cpu_fast::batchnorm2d_backward_eval(s, xv.data(), gamma.data(), rmean.data(), rvar.data(), dyv.data(),
                                      fdx.data(), fdg.data(), fdb.data(), 1e-5,
                                      relu ? fy_stored.data() : nullptr);

  const std::vector<double> xd = doubles(xv), gd = doubles(gamma), bd = doubles(beta), rmd = doubles(rmean),
                            rvd = doubles(rvar);
  std::vector<double> ry(n), rdx(n), rdg(c), rdb(c);
  cpu::batchnorm2d_forward_eval<double>(s, xd.data(), gd.data(), bd.data(), rmd.data(), rvd.data(), ry.data(),
                                        1e-5);
  if (relu) cpu::relu_forward<double>(ry.data(), ry.data(), static_cast<std::int64_t>(n));
  const std::vector<double> dyd = reference_dy(dyv, y);
  cpu::batchnorm2d_backward_eval<double>(s, xd.data(), gd.data(), rmd.data(), rvd.data(), dyd.data(),
                                         rdx.data(), rdg.data(), rdb.data(), 1e-5);
  expect_bf16_output("y", values(y), fy, ry, a);
  expect_bf16_output("dx", values(dx), fdx, rdx, a);
  expect_f32_output("dgamma", dgamma.to_vector<float>(), fdg, rdg, a);
  expect_f32_output("dbeta", dbeta.to_vector<float>(), fdb, rdb, a);
}

// Odd sizes; the second above kParallelMinElements (the threaded channel loop).
INSTANTIATE_TEST_SUITE_P(Shapes, CpuBf16BatchNorm,
                         ::testing::Values(BnCase{{.n = 3, .c = 5, .h = 7, .w = 9}, false},
                                           BnCase{{.n = 3, .c = 5, .h = 7, .w = 9}, true},
                                           BnCase{{.n = 5, .c = 17, .h = 21, .w = 23}, true}));

}  // namespace
}  // namespace engine
