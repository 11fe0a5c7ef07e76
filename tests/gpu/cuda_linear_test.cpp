// Linear through cuBLAS against the float64 CPU reference: y = x W^T + b, dx = dy W, dW = dy^T x, db, for
// odd shapes, fp32 and TF32, plus run-to-run determinism. Tolerances as in cuda_conv2d_test.cpp: fp32 is
// within 2x the plain-summation bound (L + 2) 2^-24 sum |term| (cuBLAS may split the reduction, which only
// reorders it); TF32 adds 2^-9 relative per product; db is a double sum rounded once.
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/linear.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/linear.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

struct LinearCase {
  int n, in, out;
  bool tf32;
};

// Readable parameter names in gtest/ctest output.
void PrintTo(const LinearCase& p, std::ostream* os) {
  *os << fmt::format("n {} in {} out {} {}", p.n, p.in, p.out, p.tf32 ? "tf32" : "fp32");
}

class CudaLinear : public ::testing::TestWithParam<LinearCase> {};

TEST_P(CudaLinear, ForwardAndBackwardMatchTheReference) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const LinearCase p = GetParam();
  cuda::CudaHandlesOptions options;
  options.allow_tf32_matmul = p.tf32;
  cuda::CudaHandles handles(0, s, options);
  const LinearShape shape{.n = p.n, .in_features = p.in, .out_features = p.out};
  const auto x = nonzero_floats(shape.x_size(), 201), w = nonzero_floats(shape.w_size(), 202);
  const auto b = nonzero_floats(static_cast<std::size_t>(p.out), 203),
             dy = nonzero_floats(shape.y_size(), 204);
  const auto xd = widen(x), wd = widen(w), bd = widen(b), dyd = widen(dy);
  const auto xa = abs_of(xd), wa = abs_of(wd), ba = abs_of(bd), dya = abs_of(dyd);
  std::vector<double> y_ref(shape.y_size()), y_mag(shape.y_size()), dx_ref(shape.x_size()),
      dx_mag(shape.x_size()), dw_ref(shape.w_size()), dw_mag(shape.w_size()),
      db_ref(static_cast<std::size_t>(p.out)), db_mag(static_cast<std::size_t>(p.out));
  cpu::linear_forward(shape, xd.data(), wd.data(), bd.data(), y_ref.data());
  cpu::linear_forward(shape, xa.data(), wa.data(), ba.data(), y_mag.data());
  cpu::linear_backward(shape, xd.data(), wd.data(), dyd.data(), dx_ref.data(), dw_ref.data(), db_ref.data());
  cpu::linear_backward(shape, xa.data(), wa.data(), dya.data(), dx_mag.data(), dw_mag.data(), db_mag.data());

  Tensor x_d = to_device(x, s), w_d = to_device(w, s), b_d = to_device(b, s), dy_d = to_device(dy, s);
  auto run = [&](std::vector<float>& y, std::vector<float>& dx, std::vector<float>& dw,
                 std::vector<float>& db) {
    Tensor y_d = poisoned<float>(static_cast<std::int64_t>(shape.y_size()), s);
    Tensor dx_d = poisoned<float>(static_cast<std::int64_t>(shape.x_size()), s);
    Tensor dw_d = poisoned<float>(static_cast<std::int64_t>(shape.w_size()), s);
    Tensor db_d = poisoned<float>(p.out, s);
    cuda::linear_forward(handles, s, shape, x_d.data<float>(), w_d.data<float>(), b_d.data<float>(),
                         y_d.data<float>());
    cuda::linear_backward(handles, s, shape, x_d.data<float>(), w_d.data<float>(), dy_d.data<float>(),
                          dx_d.data<float>(), dw_d.data<float>(), db_d.data<float>());
    y = to_host<float>(y_d, s);
    dx = to_host<float>(dx_d, s);
    dw = to_host<float>(dw_d, s);
    db = to_host<float>(db_d, s);
  };
  std::vector<float> y, dx, dw, db;
  run(y, dx, dw, db);
  const double tf32 = p.tf32 ? 0x1p-9 : 0.0;
  EXPECT_TRUE(close_to(y, y_ref, y_mag, tf32 + 2 * fp32_sum_bound(p.in + 1))) << "y";
  EXPECT_TRUE(close_to(dx, dx_ref, dx_mag, tf32 + 2 * fp32_sum_bound(p.out))) << "dx";
  EXPECT_TRUE(close_to(dw, dw_ref, dw_mag, tf32 + 2 * fp32_sum_bound(p.n))) << "dw";
  std::vector<double> db_scale(db_ref.size());
  for (std::size_t i = 0; i < db_ref.size(); ++i) db_scale[i] = std::fabs(db_ref[i]) + 1e-9 * db_mag[i];
  EXPECT_TRUE(close_to(db, db_ref, db_scale, 0x1p-23)) << "db";

  std::vector<float> y2, dx2, dw2, db2;
  run(y2, dx2, dw2, db2);
  EXPECT_TRUE(bitwise_equal(y2, y));
  EXPECT_TRUE(bitwise_equal(dx2, dx));
  EXPECT_TRUE(bitwise_equal(dw2, dw));
  EXPECT_TRUE(bitwise_equal(db2, db));
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaLinear,
                         ::testing::Values(LinearCase{3, 37, 11, false}, LinearCase{65, 301, 10, false},
                                           LinearCase{129, 64, 100, false}, LinearCase{1, 5, 1, false},
                                           LinearCase{65, 301, 10, true}),
                         [](const ::testing::TestParamInfo<LinearCase>& param) {
                           const LinearCase& p = param.param;
                           return fmt::format("n{}_in{}_out{}_{}", p.n, p.in, p.out,
                                              p.tf32 ? "tf32" : "fp32");
                         });

TEST(CudaLinearRules, NullDxAndNullBiasAreAllowed) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  cuda::CudaHandles handles(0, s);
  const LinearShape shape{.n = 3, .in_features = 7, .out_features = 5};
  const auto x = nonzero_floats(shape.x_size(), 211), w = nonzero_floats(shape.w_size(), 212);
  const auto dy = nonzero_floats(shape.y_size(), 213);
  std::vector<double> y_ref(shape.y_size()), dw_ref(shape.w_size());
  cpu::linear_forward(shape, widen(x).data(), widen(w).data(), static_cast<const double*>(nullptr),
                      y_ref.data());
  cpu::linear_backward(shape, widen(x).data(), widen(w).data(), widen(dy).data(),
                       static_cast<double*>(nullptr), dw_ref.data(), static_cast<double*>(nullptr));
  Tensor x_d = to_device(x, s), w_d = to_device(w, s), dy_d = to_device(dy, s);
  Tensor y_d = poisoned<float>(static_cast<std::int64_t>(shape.y_size()), s);
  Tensor dw_d = poisoned<float>(static_cast<std::int64_t>(shape.w_size()), s);
  cuda::linear_forward(handles, s, shape, x_d.data<float>(), w_d.data<float>(), nullptr, y_d.data<float>());
  cuda::linear_backward(handles, s, shape, x_d.data<float>(), w_d.data<float>(), dy_d.data<float>(), nullptr,
                        dw_d.data<float>(), nullptr);
  // Inputs below 1 in magnitude, at most 7 terms: 1e-5 relative to max(|ref|, 1) is > (7 + 2) 2^-24 * 7.
  EXPECT_TRUE(close_to(to_host<float>(y_d, s), y_ref, max_abs_or_one(y_ref), 1e-5));
  EXPECT_TRUE(close_to(to_host<float>(dw_d, s), dw_ref, max_abs_or_one(dw_ref), 1e-5));
}

}  // namespace
}  // namespace engine
