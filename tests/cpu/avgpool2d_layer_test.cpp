// AvgPool2d beyond the reference: the fast float32 CPU kernels against it (bit for bit: the same double
// arithmetic in the same order, kernels/cpu_fast/avgpool2d.h), on odd sizes below and above the threading
// threshold with outputs poisoned first; the layer on the float32 and float64 paths; its options refused by
// name; and a whole-model gradient check of a net with the layer between a convolution and a linear layer.

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/cpu/avgpool2d.h"
#include "kernels/cpu_fast/avgpool2d.h"
#include "layers/avgpool2d.h"
#include "tests/common/float_checks.h"
#include "tests/common/test_data.h"
#include "tests/cpu/layer_model_checks.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using engine::testing::expect_bitwise;
using engine::testing::uniform_floats;
using testing::cpu_context;
using testing::host_values;
using testing::random_tensor;

TEST(CpuFastAvgPool2d, EqualsTheReferenceBitwise) {
  const Pool2dShape windows[] = {
      {.n = 3, .c = 5, .h = 9, .w = 11, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2},
      {.n = 2,
       .c = 3,
       .h = 13,
       .w = 7,
       .kernel_h = 3,
       .kernel_w = 3,
       .stride_h = 2,
       .stride_w = 2,
       .pad_h = 1,
       .pad_w = 1},
      {.n = 2,
       .c = 5,
       .h = 11,
       .w = 9,
       .kernel_h = 3,
       .kernel_w = 2,
       .stride_h = 1,
       .stride_w = 3,
       .pad_h = 2,
       .pad_w = 1},
      // 8*64*27*25 = 345600 elements: above the threading threshold.
      {.n = 8,
       .c = 64,
       .h = 27,
       .w = 25,
       .kernel_h = 3,
       .kernel_w = 3,
       .stride_h = 2,
       .stride_w = 2,
       .pad_h = 1,
       .pad_w = 1},
  };
  for (const Pool2dShape& w : windows) {
    for (const bool include : {true, false}) {
      const AvgPool2dShape s{w, include};
      const std::string what =
          fmt::format("{}x{} kernel {}x{} count_include_pad {}", w.h, w.w, w.kernel_h, w.kernel_w, include);
      const auto x = uniform_floats(static_cast<std::size_t>(s.input_size()), 16);
      const auto dy = uniform_floats(static_cast<std::size_t>(s.output_size()), 17);
      std::vector<float> y(dy.size(), NAN), y_ref(dy.size(), NAN);
      cpu_fast::avgpool2d_forward(s, x.data(), y.data());
      cpu::avgpool2d_forward<float>(s, x.data(), y_ref.data());
      expect_bitwise(y, y_ref, what + " y");
      std::vector<float> dx(x.size(), NAN), dx_ref(x.size(), NAN);
      cpu_fast::avgpool2d_backward(s, dy.data(), dx.data());
      cpu::avgpool2d_backward<float>(s, dy.data(), dx_ref.data());
      expect_bitwise(dx, dx_ref, what + " dx");
    }
  }
}

// The layer on both CPU paths against the float64 reference called directly.
TEST(AvgPool2dLayer, ForwardAndBackwardEqualTheReferenceOnBothCpuPaths) {
  const AvgPool2dOptions o{.kernel_h = 3,
                           .kernel_w = 2,
                           .stride_h = 2,
                           .stride_w = 1,
                           .pad_h = 1,
                           .pad_w = 1,
                           .count_include_pad = false};
  const AvgPool2dShape s{{.n = 3,
                          .c = 4,
                          .h = 9,
                          .w = 7,
                          .kernel_h = 3,
                          .kernel_w = 2,
                          .stride_h = 2,
                          .stride_w = 1,
                          .pad_h = 1,
                          .pad_w = 1},
                         false};
  const Tensor x = random_tensor({3, 4, 9, 7}, DType::F64, 41);
  const Tensor dy = random_tensor({3, 4, s.p(), s.q()}, DType::F64, 42);
  const std::vector<double> xv = host_values(x), dyv = host_values(dy);
  std::vector<double> y_ref(dyv.size()), dx_ref(xv.size());
  cpu::avgpool2d_forward(s, xv.data(), y_ref.data());
  cpu::avgpool2d_backward(s, dyv.data(), dx_ref.data());
  for (const DType dtype : {DType::F64, DType::F32}) {
    auto net = std::make_unique<Sequential>();
    net->emplace<AvgPool2d>(o);
    Model m("pool", std::move(net), {4, 9, 7});
    m.finalize(cpu_context(dtype), 0);
    m.set_needs_input_grad(true);
    const Tensor y = m.forward(testing::host_tensor(xv, x.shape(), dtype), Mode::Train);
    EXPECT_EQ(y.shape(), (Shape{3, 4, 5, 8}));
    const std::vector<double> yv = host_values(y);
    const std::vector<double> dxv = host_values(m.backward(testing::host_tensor(dyv, dy.shape(), dtype)));
    const double tol = dtype == DType::F64 ? 0.0 : 1e-6;  // float32: one rounding of values below 2
    for (std::size_t i = 0; i < yv.size(); ++i) EXPECT_NEAR(yv[i], y_ref[i], tol) << dtype_name(dtype) << i;
    for (std::size_t i = 0; i < dxv.size(); ++i)
      EXPECT_NEAR(dxv[i], dx_ref[i], tol) << dtype_name(dtype) << i;
  }
}

std::string error_of(const auto& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(AvgPool2dLayer, BadOptionsAndInputsAreRefusedByName) {
  EXPECT_NE(error_of([] { AvgPool2d(3, 1, 3); }).find("bad options: kernel 3x3, stride 1x1, padding 3x3"),
            std::string::npos);
  EXPECT_NE(error_of([] { AvgPool2d(0); }).find("bad options"), std::string::npos);
  AvgPool2d pool(5, 1, 1);
  EXPECT_NE(error_of([&] {
              pool.output_shape({2, 3, 2, 9});
            }).find("does not fit in the input [2, 3, 2, 9]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              pool.output_shape({2, 3, 9});
            }).find("expects an input [N, C, H, W]"),
            std::string::npos);
  EXPECT_EQ(pool.output_shape({2, 3, 5, 9}), (Shape{2, 3, 3, 7}));
  EXPECT_EQ(AvgPool2d(2).options().stride_w, 2) << "stride 0 means the kernel's size";
}

// conv -> AvgPool2d (overlapping, padding not counted) -> flatten -> linear, element by element.
TEST(AvgPool2dLayer, ModelGradientCheck) {
  auto net = std::make_unique<Sequential>();
  net->emplace<Conv2d>(Conv2dOptions{.in_channels = 2, .out_channels = 3, .kernel_size = 3, .padding = 1});
  net->emplace<AvgPool2d>(3, 2, 1, false);
  net->emplace<Flatten>();
  net->emplace<Linear>(3 * 3 * 4, 3);
  Model m("avgpool_net", std::move(net), {2, 5, 7});
  m.finalize(cpu_context(DType::F64), 3);
  testing::expect_model_gradients(m, {2, 5, 7}, 3, /*min_checked=*/0,
                                  /*max_elements_per_input=*/0);  // every element
}

}  // namespace
}  // namespace engine::layers
