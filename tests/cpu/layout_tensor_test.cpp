// The memory layout of a tensor (core/layout.h) and the transpose op between the two (kernels/ops/
// transpose.h): which tensors may be NHWC, which views keep the layout, the index formula of both
// directions on odd sizes, that they are each other's inverse, and the refusals.

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/tensor.h"
#include "kernels/ops/dispatch.h"
#include "kernels/ops/relu.h"
#include "kernels/ops/residual_add.h"
#include "kernels/ops/transpose.h"
#include "tests/common/error_of.h"

namespace engine {
namespace {

using testing::error_of;

const ExecutionContext kCpu{};

// NCHW element (n, c, h, w) holds this value: every element distinct, so any misplaced one shows.
double code(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return static_cast<double>(((n * 100 + c) * 100 + h) * 100 + w);
}

template <typename T>
Tensor coded_nchw(const Shape& s) {
  Tensor t = Tensor::empty(s, dtype_of<T>::value);
  T* p = t.data<T>();
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t c = 0; c < s[1]; ++c)
      for (std::int64_t h = 0; h < s[2]; ++h)
        for (std::int64_t w = 0; w < s[3]; ++w) *p++ = static_cast<T>(code(n, c, h, w));
  return t;
}

TEST(TensorLayout, DefaultsToNchwAndShowsNhwc) {
  const Tensor a = Tensor::empty({2, 3, 4, 5}, DType::F32);
  EXPECT_EQ(a.layout(), Layout::NCHW);
  EXPECT_EQ(a.str().find("NHWC"), std::string::npos) << a.str();
  const Tensor b = Tensor::zeros({2, 3, 4, 5}, DType::F32, Device::cpu(), nullptr, Layout::NHWC);
  EXPECT_EQ(b.layout(), Layout::NHWC);
  EXPECT_NE(b.str().find("[2, 3, 4, 5] NHWC"), std::string::npos) << b.str();
  EXPECT_EQ(b.shape(), (Shape{2, 3, 4, 5}));  // the logical shape, whatever the memory order
}

TEST(TensorLayout, OnlyFourDimensionalTensorsMayBeNhwc) {
  const std::string e = error_of([] {
    (void)Tensor::empty({6, 5}, DType::F32, Device::cpu(), nullptr, Layout::NHWC);
  });
  EXPECT_NE(e.find("NHWC layout is for 4-d tensors"), std::string::npos) << e;
  EXPECT_NE(e.find("[6, 5]"), std::string::npos) << e;
}

TEST(TensorLayout, SliceAlongNKeepsTheLayoutAndOtherViewsAreRefused) {
  const Tensor nchw = coded_nchw<float>({3, 2, 2, 3});
  const Tensor nhwc = ops::to_layout(kCpu, nchw, Layout::NHWC);
  const Tensor rows = nhwc.slice(1, 3);
  EXPECT_EQ(rows.layout(), Layout::NHWC);
  EXPECT_EQ(rows.shape(), (Shape{2, 2, 2, 3}));
  // Image 1 of the slice (12 elements per image) is image 2 of the original; its element (c=1, h=0, w=2)
  // sits at NHWC offset (h * W + w) * C + c = (0 * 3 + 2) * 2 + 1 within the image.
  EXPECT_EQ(rows.data<float>()[1 * 12 + (0 * 3 + 2) * 2 + 1], static_cast<float>(code(2, 1, 0, 2)));
  EXPECT_EQ(nhwc.view({3, 2, 2, 3}).layout(), Layout::NHWC);  // a view to its own shape is harmless
  EXPECT_NE(error_of([&] { (void)nhwc.view({3, 12}); }).find("NHWC order"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)nhwc.flat_range(0, {6}); }).find("NHWC order"), std::string::npos);
  Tensor other = Tensor::empty({3, 2, 2, 3}, DType::F32);
  EXPECT_NE(error_of([&] { other.copy_from(nhwc); }).find("layouts differ"), std::string::npos);
}

template <typename T>
void check_index_formula_and_inverse() {
  const Shape s{3, 5, 7, 2};  // odd sizes: N, C, H, W all different
  const Tensor nchw = coded_nchw<T>(s);
  Tensor nhwc = Tensor::empty(s, dtype_of<T>::value, Device::cpu(), nullptr, Layout::NHWC);
  nhwc.fill_bytes(0xFF);
  ops::transpose_layout(kCpu, nchw, nhwc);
  const T* p = nhwc.data<T>();
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t h = 0; h < s[2]; ++h)
      for (std::int64_t w = 0; w < s[3]; ++w)
        for (std::int64_t c = 0; c < s[1]; ++c)
          ASSERT_EQ(p[((n * s[2] + h) * s[3] + w) * s[1] + c], static_cast<T>(code(n, c, h, w)))
              << "NHWC element (" << n << ", " << c << ", " << h << ", " << w << ")";
  Tensor back = Tensor::empty(s, dtype_of<T>::value);
  back.fill_bytes(0xFF);
  ops::transpose_layout(kCpu, nhwc, back);  // the backward direction: the inverse
  EXPECT_EQ(back.to_vector<T>(), nchw.to_vector<T>());
}

TEST(TransposeLayout, MatchesTheIndexFormulaAndItsInverseRestoresEveryType) {
  check_index_formula_and_inverse<float>();
  check_index_formula_and_inverse<double>();
  check_index_formula_and_inverse<std::int32_t>();
}

TEST(TransposeLayout, ToLayoutReturnsTheTensorItselfWhenNothingChanges) {
  const Tensor t = coded_nchw<float>({1, 2, 3, 4});
  EXPECT_TRUE(ops::to_layout(kCpu, t, Layout::NCHW).shares_storage_with(t));
  const Tensor flat = Tensor::empty({6}, DType::F32);
  EXPECT_TRUE(ops::to_layout(kCpu, flat, Layout::NHWC).shares_storage_with(flat));  // not 4-d: no NHWC form
  EXPECT_FALSE(ops::to_layout(kCpu, t, Layout::NHWC).shares_storage_with(t));
}

TEST(TransposeLayout, RefusesMismatchedTensors) {
  const Tensor a = coded_nchw<float>({1, 2, 3, 4});
  const Tensor same_layout = Tensor::empty({1, 2, 3, 4}, DType::F32);
  const Tensor other_shape = Tensor::empty({1, 2, 4, 3}, DType::F32, Device::cpu(), nullptr, Layout::NHWC);
  const Tensor other_dtype = Tensor::empty({1, 2, 3, 4}, DType::F64, Device::cpu(), nullptr, Layout::NHWC);
  for (const Tensor* bad : {&same_layout, &other_shape, &other_dtype}) {
    const std::string e = error_of([&] { ops::transpose_layout(kCpu, a, *bad); });
    EXPECT_NE(e.find("transpose_layout"), std::string::npos) << e;
    EXPECT_NE(e.find(bad->str()), std::string::npos) << e;
  }
}

TEST(MixedLayouts, ElementwiseOpsRefuseThemNamingTheOpAndTheTensors) {
  const Tensor nchw = coded_nchw<float>({2, 3, 2, 2});
  const Tensor nhwc = ops::to_layout(kCpu, nchw, Layout::NHWC);
  const Tensor y = Tensor::empty({2, 3, 2, 2}, DType::F32);
  const std::string relu = error_of([&] { ops::relu_forward(kCpu, nhwc, y); });
  EXPECT_NE(relu.find("relu: mixed layouts"), std::string::npos) << relu;
  EXPECT_NE(relu.find("x float32[2, 3, 2, 2] NHWC"), std::string::npos) << relu;
  EXPECT_NE(relu.find("y float32[2, 3, 2, 2] on cpu"), std::string::npos) << relu;
  const std::string add = error_of([&] { ops::residual_add(kCpu, nchw, nhwc, y); });
  EXPECT_NE(add.find("residual_add: mixed layouts"), std::string::npos) << add;
  // The same op in one layout runs.
  const Tensor y_nhwc = Tensor::empty({2, 3, 2, 2}, DType::F32, Device::cpu(), nullptr, Layout::NHWC);
  ops::relu_forward(kCpu, nhwc, y_nhwc);
  EXPECT_EQ(ops::to_layout(kCpu, y_nhwc, Layout::NCHW).to_vector<float>(), nchw.to_vector<float>());
}

}  // namespace
}  // namespace engine
