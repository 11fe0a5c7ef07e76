// Conv2d on the GPU -- cuDNN (conv2d_cudnn) and the implicit GEMM (conv2d_implicit_gemm) -- against the
// float64 CPU reference and against each other: y, dx, dw, db over stride/padding/kernel variants with odd
// sizes, multi-tile shapes (and split-K for the direct dW), plus determinism and TF32.
//
// Tolerance (see kernel_test_util.h): an output that sums L products has, in fp32, an error of at most
// (L + 2) 2^-24 times its magnitude sum |term|, which the test gets by running the reference on |x|, |w|,
// |dy|.
//  - direct: a plain FMA chain per output (split-K just reorders it): 2x that bound;
//  - cuDNN: may pick Winograd or FFT, whose transforms add roundings beyond a plain dot product but stay
//    O(2^-24) times the magnitude with a modest constant: 8x the bound;
//  - TF32 (allow_tf32): each input is rounded to 10 mantissa bits (<= 2^-10 relative by truncation), so a
//    product is off by up to 2^-9 relative: 2^-9 plus the fp32 bound;
//  - db is a double-accumulated sum, rounded once: one ulp.
// A wrong index or a dropped term moves an output by ~magnitude / L, far outside all of these.
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cuda/conv2d_cudnn.h"
#include "kernels/cuda/conv2d_implicit_gemm.h"
#include "kernels/cuda/handles.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

enum class Impl { Cudnn, CudnnTf32, ImplicitGemm };

struct ConvCase {
  int n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w;
  bool bias;
};

// Readable parameter names in gtest/ctest output.
void PrintTo(const ConvCase& p, std::ostream* os) {
  *os << fmt::format("x[{},{},{},{}] w[{},{},{},{}] stride ({},{}) pad ({},{}){}", p.n, p.c, p.h, p.w, p.k,
                     p.c, p.r, p.s, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.bias ? " bias" : "");
}

Conv2dShape shape_of(const ConvCase& p) {
  return {.n = p.n,
          .c = p.c,
          .h = p.h,
          .w = p.w,
          .k = p.k,
          .r = p.r,
          .s = p.s,
          .stride_h = p.stride_h,
          .stride_w = p.stride_w,
          .pad_h = p.pad_h,
          .pad_w = p.pad_w};
}

// One convolution's inputs, float64 reference, magnitudes, and the device copies of the inputs.
struct ConvProblem {
  Conv2dShape shape;
  std::vector<float> x, w, b, dy;
  std::vector<double> y_ref, dx_ref, dw_ref, db_ref;
  std::vector<double> y_mag, dx_mag, dw_mag, db_mag;
  Tensor x_d, w_d, b_d, dy_d;

  ConvProblem(const ConvCase& p, std::uint64_t seed, cudaStream_t s) : shape(shape_of(p)) {
    shape.validate();
    x = nonzero_floats(shape.x_size(), seed);
    w = nonzero_floats(shape.w_size(), seed + 1);
    if (p.bias) b = nonzero_floats(static_cast<std::size_t>(shape.k), seed + 2);
    dy = nonzero_floats(shape.y_size(), seed + 3);
    const auto xd = widen(x), wd = widen(w), bd = widen(b), dyd = widen(dy);
    const auto xa = abs_of(xd), wa = abs_of(wd), ba = abs_of(bd), dya = abs_of(dyd);
    y_ref.resize(shape.y_size());
    y_mag.resize(shape.y_size());
    cpu::conv2d_forward(shape, xd.data(), wd.data(), p.bias ? bd.data() : nullptr, y_ref.data());
    cpu::conv2d_forward(shape, xa.data(), wa.data(), p.bias ? ba.data() : nullptr, y_mag.data());
    dx_ref.resize(shape.x_size());
    dx_mag.resize(shape.x_size());
    dw_ref.resize(shape.w_size());
    dw_mag.resize(shape.w_size());
    db_ref.resize(static_cast<std::size_t>(shape.k));
    db_mag.resize(static_cast<std::size_t>(shape.k));
    cpu::conv2d_backward(shape, xd.data(), wd.data(), dyd.data(), dx_ref.data(), dw_ref.data(),
                         db_ref.data());
    cpu::conv2d_backward(shape, xa.data(), wa.data(), dya.data(), dx_mag.data(), dw_mag.data(),
                         db_mag.data());
    x_d = to_device(x, s);
    w_d = to_device(w, s);
    if (p.bias) b_d = to_device(b, s);
    dy_d = to_device(dy, s);
  }
  const float* bias() const { return b.empty() ? nullptr : b_d.data<float>(); }
  // Reduction lengths of y (plus the bias), dx and dw.
  std::int64_t y_terms() const { return std::int64_t{shape.c} * shape.r * shape.s + 1; }
  std::int64_t dx_terms() const { return std::int64_t{shape.k} * shape.r * shape.s; }
  std::int64_t dw_terms() const { return std::int64_t{shape.n} * shape.p() * shape.q(); }
};

struct ConvOutputs {
  std::vector<float> y, dx, dw, db;
};

// Runs forward and backward with `impl` on poisoned outputs.
ConvOutputs run(Impl impl, const ConvProblem& pr, cuda::CudaHandles* handles, cudaStream_t s) {
  const auto& g = pr.shape;
  Tensor y = poisoned<float>(static_cast<std::int64_t>(g.y_size()), s);
  Tensor dx = poisoned<float>(static_cast<std::int64_t>(g.x_size()), s);
  Tensor dw = poisoned<float>(static_cast<std::int64_t>(g.w_size()), s);
  Tensor db = poisoned<float>(g.k, s);
  float* db_ptr = pr.b.empty() ? nullptr : db.data<float>();
  if (impl == Impl::ImplicitGemm) {
    cuda::conv2d_forward_implicit_gemm(s, g, pr.x_d.data<float>(), pr.w_d.data<float>(), pr.bias(),
                                       y.data<float>());
    cuda::conv2d_backward_implicit_gemm(s, g, pr.x_d.data<float>(), pr.w_d.data<float>(),
                                        pr.dy_d.data<float>(), dx.data<float>(), dw.data<float>(), db_ptr);
  } else {
    cuda::conv2d_forward_cudnn(*handles, s, g, pr.x_d.data<float>(), pr.w_d.data<float>(), pr.bias(),
                               y.data<float>());
    cuda::conv2d_backward_cudnn(*handles, s, g, pr.x_d.data<float>(), pr.w_d.data<float>(),
                                pr.dy_d.data<float>(), dx.data<float>(), dw.data<float>(), db_ptr);
  }
  ConvOutputs out{to_host<float>(y, s), to_host<float>(dx, s), to_host<float>(dw, s), {}};
  if (db_ptr != nullptr) out.db = to_host<float>(db, s);
  return out;
}

double slack_of(Impl impl) { return impl == Impl::ImplicitGemm ? 2.0 : 8.0; }
double tf32_of(Impl impl) { return impl == Impl::CudnnTf32 ? 0x1p-9 : 0.0; }

void expect_matches_reference(Impl impl, const ConvProblem& pr, const ConvOutputs& out) {
  const double slack = slack_of(impl), tf32 = tf32_of(impl);
  EXPECT_TRUE(close_to(out.y, pr.y_ref, pr.y_mag, tf32 + slack * fp32_sum_bound(pr.y_terms()))) << "y";
  EXPECT_TRUE(close_to(out.dx, pr.dx_ref, pr.dx_mag, tf32 + slack * fp32_sum_bound(pr.dx_terms()))) << "dx";
  EXPECT_TRUE(close_to(out.dw, pr.dw_ref, pr.dw_mag, tf32 + slack * fp32_sum_bound(pr.dw_terms()))) << "dw";
  if (!pr.b.empty()) {
    std::vector<double> db_scale(pr.db_ref.size());
    for (std::size_t i = 0; i < db_scale.size(); ++i)
      db_scale[i] = std::fabs(pr.db_ref[i]) + 1e-9 * pr.db_mag[i];
    EXPECT_TRUE(close_to(out.db, pr.db_ref, db_scale, 0x1p-23)) << "db";
  }
}

class CudaConv2d : public ::testing::TestWithParam<ConvCase> {};

TEST_P(CudaConv2d, CudnnMatchesTheReferenceAndIsDeterministic) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  cuda::CudaHandles handles(0, stream.get());
  const ConvProblem pr(GetParam(), 101, stream.get());
  const ConvOutputs first = run(Impl::Cudnn, pr, &handles, stream.get());
  expect_matches_reference(Impl::Cudnn, pr, first);
  const ConvOutputs second = run(Impl::Cudnn, pr, &handles, stream.get());
  EXPECT_TRUE(bitwise_equal(second.y, first.y)) << "y run to run";
  EXPECT_TRUE(bitwise_equal(second.dx, first.dx)) << "dx run to run (deterministic algorithms)";
  EXPECT_TRUE(bitwise_equal(second.dw, first.dw)) << "dw run to run (deterministic algorithms)";
  EXPECT_TRUE(bitwise_equal(second.db, first.db)) << "db run to run";
}

TEST_P(CudaConv2d, CudnnWithBenchmarkedAlgorithmsMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  cuda::CudaHandlesOptions options;
  options.conv_search = cuda::ConvAlgoSearch::Benchmark;
  cuda::CudaHandles handles(0, stream.get(), options);
  const ConvProblem pr(GetParam(), 111, stream.get());
  expect_matches_reference(Impl::Cudnn, pr, run(Impl::Cudnn, pr, &handles, stream.get()));
}

TEST_P(CudaConv2d, CudnnWithTf32MatchesTheReferenceToTf32Precision) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  cuda::CudaHandlesOptions options;
  options.allow_tf32 = true;
  cuda::CudaHandles handles(0, stream.get(), options);
  const ConvProblem pr(GetParam(), 121, stream.get());
  expect_matches_reference(Impl::CudnnTf32, pr, run(Impl::CudnnTf32, pr, &handles, stream.get()));
}

TEST_P(CudaConv2d, DirectMatchesTheReferenceAndCudnnAndIsDeterministic) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  cuda::CudaHandles handles(0, stream.get());
  const ConvProblem pr(GetParam(), 131, stream.get());
  const ConvOutputs direct = run(Impl::ImplicitGemm, pr, nullptr, stream.get());
  expect_matches_reference(Impl::ImplicitGemm, pr, direct);

  // Against cuDNN: both are within their bounds of the reference, so within the sum of them of each other.
  const ConvOutputs cudnn = run(Impl::Cudnn, pr, &handles, stream.get());
  const double both = slack_of(Impl::ImplicitGemm) + slack_of(Impl::Cudnn);
  EXPECT_TRUE(close_to(direct.y, widen(cudnn.y), pr.y_mag, both * fp32_sum_bound(pr.y_terms())))
      << "y vs cuDNN";
  EXPECT_TRUE(close_to(direct.dx, widen(cudnn.dx), pr.dx_mag, both * fp32_sum_bound(pr.dx_terms())))
      << "dx vs cuDNN";
  EXPECT_TRUE(close_to(direct.dw, widen(cudnn.dw), pr.dw_mag, both * fp32_sum_bound(pr.dw_terms())))
      << "dw vs cuDNN";

  const ConvOutputs again = run(Impl::ImplicitGemm, pr, nullptr, stream.get());
  EXPECT_TRUE(bitwise_equal(again.y, direct.y)) << "y run to run";
  EXPECT_TRUE(bitwise_equal(again.dx, direct.dx)) << "dx run to run";
  EXPECT_TRUE(bitwise_equal(again.dw, direct.dw)) << "dw run to run";
  EXPECT_TRUE(bitwise_equal(again.db, direct.db)) << "db run to run";
}

std::string conv_case_name(const ::testing::TestParamInfo<ConvCase>& param) {
  const ConvCase& p = param.param;
  return fmt::format("x{}x{}x{}x{}_w{}x{}x{}_s{}{}_p{}{}{}", p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.stride_h,
                     p.stride_w, p.pad_h, p.pad_w, p.bias ? "_bias" : "");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaConv2d,
    ::testing::Values(ConvCase{3, 5, 7, 9, 6, 3, 3, 1, 1, 1, 1, true},       // 3x3 same padding
                      ConvCase{3, 5, 7, 9, 6, 3, 3, 2, 2, 1, 1, true},       // strided (ResNet downsampling)
                      ConvCase{3, 5, 7, 9, 4, 1, 1, 2, 2, 0, 0, false},      // 1x1 projection shortcut
                      ConvCase{3, 5, 7, 9, 6, 5, 3, 1, 2, 2, 0, true},       // non-square kernel/stride/pad
                      ConvCase{3, 5, 7, 9, 6, 4, 4, 3, 3, 1, 2, false},      // stride 3: gaps in dx's gather
                      ConvCase{3, 5, 9, 11, 6, 1, 7, 1, 1, 0, 3, true},      // inception_v3's 1x7
                      ConvCase{3, 5, 9, 11, 6, 7, 1, 1, 1, 3, 0, false},     // and 7x1
                      ConvCase{2, 5, 9, 11, 4, 3, 1, 2, 1, 1, 0, true},      // 3x1, stride (2, 1)
                      ConvCase{2, 19, 13, 13, 70, 3, 3, 1, 1, 1, 1, true}),  // several tiles; split-K dW
    conv_case_name);

TEST(CudaConv2dRules, RejectsAKernelLargerThanThePaddedInput) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const Conv2dShape bad{.n = 1, .c = 1, .h = 2, .w = 2, .k = 1, .r = 5, .s = 5};
  Tensor buf = poisoned<float>(64, stream.get());
  float* p = buf.data<float>();
  EXPECT_THROW(cuda::conv2d_forward_implicit_gemm(stream.get(), bad, p, p, nullptr, p), Error);
  cuda::CudaHandles handles(0, stream.get());
  EXPECT_THROW(cuda::conv2d_forward_cudnn(handles, stream.get(), bad, p, p, nullptr, p), Error);
}

}  // namespace
}  // namespace engine
