// Pooling in ceil mode (PyTorch's ceil_mode=True, ONNX's ceil_mode = 1): the output-size rule (rounded up,
// but the last window starts inside the input or the left padding), known values that PyTorch 2.15 and
// ONNX's reference (onnx.reference, AveragePool/MaxPool) both print for these inputs (a window overhanging
// the right padding divides, with count_include_pad, by its cells inside the padded input), the backward
// as the forward's exact adjoint (average) and as the argmax's scatter (max), the fast float32 CPU kernels
// bit for bit against the reference with outputs poisoned (the 2x2 stride-2 shortcut must not take an odd
// side), and the layers written to ONNX and read back.

#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/avgpool2d.h"
#include "kernels/cpu/maxpool2d.h"
#include "kernels/cpu_fast/avgpool2d.h"
#include "kernels/cpu_fast/maxpool2d.h"
#include "layers/avgpool2d.h"
#include "layers/maxpool2d.h"
#include "layers/onnx/onnx_model.h"
#include "tests/common/float_checks.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/scratch_dirs.h"
#include "tests/common/test_data.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using engine::testing::expect_bitwise;
using testing::cpu_context;
using testing::host_values;

Pool2dShape window(int h, int w, int k, int stride, int pad, bool ceil) {
  return {.n = 1,
          .c = 1,
          .h = h,
          .w = w,
          .kernel_h = k,
          .kernel_w = k,
          .stride_h = stride,
          .stride_w = stride,
          .pad_h = pad,
          .pad_w = pad,
          .ceil_mode = ceil};
}

TEST(PoolCeilMode, OutputSizeRoundsUpButNoWindowStartsInTheRightPadding) {
  EXPECT_EQ(window(5, 7, 2, 2, 0, false).p(), 2);
  EXPECT_EQ(window(5, 7, 2, 2, 0, true).p(), 3);
  EXPECT_EQ(window(5, 7, 2, 2, 0, true).q(), 4);
  EXPECT_EQ(window(4, 4, 2, 2, 0, true).p(), 2) << "exact: the same as floor";
  EXPECT_EQ(window(6, 6, 3, 2, 1, true).p(), 4);
  EXPECT_EQ(window(6, 6, 3, 2, 1, false).p(), 3);
  // 5 + 2 - 3 = 4 over stride 3 rounds up to 3 outputs, but the third would start at 6 - 1 = 5 = the right
  // padding: 2, as PyTorch gives.
  EXPECT_EQ(window(5, 7, 3, 3, 1, true).p(), 2);
  EXPECT_EQ(window(5, 7, 3, 3, 1, true).q(), 3);
}

// y of a layer on x = 1, 2, ... (one plane), in float64.
std::vector<double> pooled(std::unique_ptr<Layer> layer, int h, int w) {
  auto net = std::make_unique<Sequential>();
  net->add(std::move(layer), "pool");
  Model m("pool", std::move(net), {1, h, w});
  m.finalize(cpu_context(DType::F64), 0);
  std::vector<double> x(static_cast<std::size_t>(h * w));
  std::iota(x.begin(), x.end(), 1.0);
  return host_values(m.forward(testing::host_tensor(x, {1, 1, h, w}, DType::F64), Mode::Eval));
}

void expect_values(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << what << "[" << i << "]";
}

TEST(PoolCeilMode, KnownValuesOfPyTorchAndOnnxReference) {
  const double ninth = 1.0 / 9.0;
  // 6x6, kernel 3, stride 2, pad 1: the last row and column of windows overhang the right padding by one.
  expect_values(pooled(std::make_unique<AvgPool2d>(AvgPool2dOptions{.kernel_h = 3,
                                                                    .kernel_w = 3,
                                                                    .stride_h = 2,
                                                                    .stride_w = 2,
                                                                    .pad_h = 1,
                                                                    .pad_w = 1,
                                                                    .count_include_pad = true,
                                                                    .ceil_mode = true}),
                       6, 6),
                {2, 4, 16 / 3.0, 3, 9, 15, 17, 9, 17, 27, 29, 15, 10.5, 16.5, 17.5, 9},
                "avg, padding counted");
  expect_values(pooled(std::make_unique<AvgPool2d>(AvgPool2dOptions{.kernel_h = 3,
                                                                    .kernel_w = 3,
                                                                    .stride_h = 2,
                                                                    .stride_w = 2,
                                                                    .pad_h = 1,
                                                                    .pad_w = 1,
                                                                    .count_include_pad = false,
                                                                    .ceil_mode = true}),
                       6, 6),
                {4.5, 6, 8, 9, 13.5, 15, 17, 18, 25.5, 27, 29, 30, 31.5, 33, 35, 36}, "avg, real cells");
  // 5x7, kernel 2 stride 2: a last row and column of half and quarter windows.
  expect_values(pooled(std::make_unique<AvgPool2d>(2, 2, 0, true), 5, 7), {5, 7, 9, 19, 21, 23}, "avg floor");
  expect_values(pooled(std::make_unique<AvgPool2d>(AvgPool2dOptions{.kernel_h = 2,
                                                                    .kernel_w = 2,
                                                                    .stride_h = 2,
                                                                    .stride_w = 2,
                                                                    .count_include_pad = true,
                                                                    .ceil_mode = true}),
                       5, 7),
                {5, 7, 9, 10.5, 19, 21, 23, 24.5, 29.5, 31.5, 33.5, 35}, "avg 2x2 ceil");
  expect_values(pooled(std::make_unique<MaxPool2d>(2, 2, 0, true), 5, 7),
                {9, 11, 13, 14, 23, 25, 27, 28, 30, 32, 34, 35}, "max 2x2 ceil");
  // Kernel 3 stride 3 pad 1 on 5x7: the third row of windows would start in the padding and is not there.
  expect_values(pooled(std::make_unique<AvgPool2d>(AvgPool2dOptions{.kernel_h = 3,
                                                                    .kernel_w = 3,
                                                                    .stride_h = 3,
                                                                    .stride_w = 3,
                                                                    .pad_h = 1,
                                                                    .pad_w = 1,
                                                                    .count_include_pad = true,
                                                                    .ceil_mode = true}),
                       5, 7),
                {20 * ninth, 5, 40 * ninth, 15, 25, 165 * ninth}, "avg 3x3 stride 3 ceil");
}

// Average pooling is linear, so its backward is exactly its adjoint: <dy, A x> = <A^T dy, x>.
TEST(PoolCeilMode, AverageBackwardIsTheForwardsAdjoint) {
  for (const bool count_pad : {true, false}) {
    // Both axes one window more than floor mode (4 x 4): the last row overhangs the bottom padding.
    AvgPool2dShape s{{.n = 2,
                      .c = 3,
                      .h = 8,
                      .w = 9,
                      .kernel_h = 3,
                      .kernel_w = 2,
                      .stride_h = 2,
                      .stride_w = 2,
                      .pad_h = 1,
                      .pad_w = 0,
                      .ceil_mode = true},
                     count_pad};
    const std::vector<double> x = engine::testing::random_values(static_cast<std::size_t>(s.input_size()), 3);
    const std::vector<double> dy =
        engine::testing::random_values(static_cast<std::size_t>(s.output_size()), 4);
    std::vector<double> y(dy.size(), std::nan("")), dx(x.size(), std::nan(""));
    cpu::avgpool2d_forward(s, x.data(), y.data());
    cpu::avgpool2d_backward(s, dy.data(), dx.data());
    EXPECT_EQ(s.p(), 5);
    EXPECT_EQ(s.q(), 5);
    EXPECT_NEAR(std::inner_product(dy.begin(), dy.end(), y.begin(), 0.0),
                std::inner_product(dx.begin(), dx.end(), x.begin(), 0.0), 1e-12);
  }
}

TEST(PoolCeilMode, CpuFastEqualsTheReferenceBitwise) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // 2x2 stride 2 on odd sides (the fast path's shape), 3x3 stride 2 pad 1, and one above the threading
  // threshold.
  const Pool2dShape shapes[] = {{.n = 2,
                                 .c = 3,
                                 .h = 9,
                                 .w = 7,
                                 .kernel_h = 2,
                                 .kernel_w = 2,
                                 .stride_h = 2,
                                 .stride_w = 2,
                                 .ceil_mode = true},
                                {.n = 2,
                                 .c = 3,
                                 .h = 8,
                                 .w = 11,
                                 .kernel_h = 3,
                                 .kernel_w = 3,
                                 .stride_h = 2,
                                 .stride_w = 2,
                                 .pad_h = 1,
                                 .pad_w = 1,
                                 .ceil_mode = true},
                                {.n = 4,
                                 .c = 8,
                                 .h = 33,
                                 .w = 35,
                                 .kernel_h = 2,
                                 .kernel_w = 2,
                                 .stride_h = 2,
                                 .stride_w = 2,
                                 .ceil_mode = true},
                                // squeezenet1_0's 3x3 stride 2 at 13x13 (the last window clipped), and a
                                // row wider than the fast loop's chunk of 64 columns, 3x2 stride 3x1.
                                {.n = 3,
                                 .c = 5,
                                 .h = 13,
                                 .w = 13,
                                 .kernel_h = 3,
                                 .kernel_w = 3,
                                 .stride_h = 2,
                                 .stride_w = 2,
                                 .ceil_mode = true},
                                {.n = 2,
                                 .c = 3,
                                 .h = 10,
                                 .w = 141,
                                 .kernel_h = 3,
                                 .kernel_w = 2,
                                 .stride_h = 3,
                                 .stride_w = 1,
                                 .pad_h = 1,
                                 .pad_w = 1,
                                 .ceil_mode = true}};
  for (const Pool2dShape& s : shapes) {
    const auto in = static_cast<std::size_t>(s.input_size()), out = static_cast<std::size_t>(s.output_size());
    const std::vector<float> x = engine::testing::uniform_floats(in, 9),
                             dy = engine::testing::uniform_floats(out, 10);
    // For the max: ties (the first in scan order wins), NaNs (the later of two in a window wins) and a run
    // of -inf, inside the planes where the fast loops run their windows side by side.
    std::vector<float> xm = x;
    const auto row = static_cast<std::size_t>(s.w);
    for (std::size_t i = 20; i + row + 40 < in; i += 97) {
      xm[i + 1] = xm[i + row] = xm[i];
      xm[i + 20] = xm[i + 22] = nan;
      xm[i + 30] = xm[i + 31] = xm[i + 32] = -std::numeric_limits<float>::infinity();
    }
    const std::string at = fmt::format(" {}x{} k{}", s.h, s.w, s.kernel_h);
    std::vector<float> y(out, nan), y_ref(out, nan), dx(in, nan), dx_ref(in, nan);
    std::vector<std::int32_t> arg(out, -1), arg_ref(out, -1);
    cpu_fast::maxpool2d_forward(s, xm.data(), y.data(), arg.data());
    cpu::maxpool2d_forward<float>(s, xm.data(), y_ref.data(), arg_ref.data());
    for (std::size_t i = 0; i < out; ++i)  // bitwise, a NaN (the input's own, passed through) equal to NaN
      ASSERT_TRUE(y[i] == y_ref[i] || (std::isnan(y[i]) && std::isnan(y_ref[i])))
          << "max y" << at << " [" << i << "]: " << y[i] << " vs reference " << y_ref[i];
    EXPECT_EQ(arg, arg_ref) << at;
    // The backward on x's own maxima (ties in overlapping windows would sum dy in another order than the
    // reference's double, as maxpool2d.h says).
    cpu_fast::maxpool2d_forward(s, x.data(), y.data(), arg.data());
    cpu::maxpool2d_forward<float>(s, x.data(), y_ref.data(), arg_ref.data());
    cpu_fast::maxpool2d_backward(s, dy.data(), arg.data(), dx.data());
    cpu::maxpool2d_backward<float>(s, dy.data(), arg_ref.data(), dx_ref.data());
    if (&s != &shapes[3]) {
      expect_bitwise(dx, dx_ref, "max dx" + at);
    } else {  // 13x13's windows overlap in both axes: a float sum of m <= 4 dy in [-1, 1] where the
              // reference sums in double, (m - 1) u of their |sum| <= 4 apart
      for (std::size_t i = 0; i < in; ++i)
        EXPECT_NEAR(dx[i], dx_ref[i], 3 * 4 * 0x1p-24) << "max dx" << at << " [" << i << "]";
    }
    for (const bool count_pad : {true, false}) {
      const AvgPool2dShape a{s, count_pad};
      std::fill(y.begin(), y.end(), nan);
      std::fill(y_ref.begin(), y_ref.end(), nan);
      std::fill(dx.begin(), dx.end(), nan);
      std::fill(dx_ref.begin(), dx_ref.end(), nan);
      cpu_fast::avgpool2d_forward(a, x.data(), y.data());
      cpu::avgpool2d_forward<float>(a, x.data(), y_ref.data());
      cpu_fast::avgpool2d_backward(a, dy.data(), dx.data());
      cpu::avgpool2d_backward<float>(a, dy.data(), dx_ref.data());
      expect_bitwise(y, y_ref, "avg y" + at);
      expect_bitwise(dx, dx_ref, "avg dx" + at);
    }
  }
}

// The max's gradient goes to its window's maximum: with x = 1, 2, ... that is the window's last real cell.
TEST(PoolCeilMode, MaxBackwardRoutesToTheClippedWindowsMaximum) {
  const Pool2dShape s = window(5, 7, 2, 2, 0, true);
  std::vector<double> x(35), y(12), dy(12, 1.0), dx(35);
  std::iota(x.begin(), x.end(), 1.0);
  std::vector<std::int32_t> arg(12);
  cpu::maxpool2d_forward<double>(s, x.data(), y.data(), arg.data());
  cpu::maxpool2d_backward<double>(s, dy.data(), arg.data(), dx.data());
  std::vector<double> want(35, 0.0);
  for (const int cell : {8, 10, 12, 13, 22, 24, 26, 27, 29, 31, 33, 34})
    want[static_cast<std::size_t>(cell)] = 1.0;
  EXPECT_EQ(dx, want);
}

TEST(PoolCeilMode, LayersWrittenToOnnxAndReadBackKeepCeilMode) {
  SKIP_WITHOUT_ONNX();
  auto net = std::make_unique<Sequential>();
  net->emplace_named<MaxPool2d>("max", 2, 2, 0, true);
  net->emplace_named<AvgPool2d>("avg", AvgPool2dOptions{.kernel_h = 3,
                                                        .kernel_w = 3,
                                                        .stride_h = 2,
                                                        .stride_w = 2,
                                                        .pad_h = 1,
                                                        .pad_w = 1,
                                                        .count_include_pad = true,
                                                        .ceil_mode = true});
  net->emplace_named<Flatten>("flatten");
  Model m("ceil_net", std::move(net), {2, 11, 9});  // 11x9 -> max 6x5 -> avg 4x3
  const ExecutionContext ctx = cpu_context(DType::F64);
  m.finalize(ctx, 1);
  const std::string path = (engine::testing::scratch_dir("onnx_ceil_", "net") / "net.onnx").string();
  onnx::export_model(m, path);
  Model again = onnx::import_model(path);
  again.finalize(ctx, 2);
  const Tensor x = testing::random_tensor({2, 2, 11, 9}, DType::F64, 5);
  const Tensor y = m.forward(x, Mode::Train);
  EXPECT_EQ(y.shape(), (Shape{2, 2 * 4 * 3}));
  EXPECT_EQ(host_values(again.forward(x, Mode::Train)), host_values(y));
  const Tensor dy = testing::random_tensor({2, 24}, DType::F64, 6);
  m.set_needs_input_grad(true);
  again.set_needs_input_grad(true);
  m.forward(x, Mode::Train);
  again.forward(x, Mode::Train);
  EXPECT_EQ(host_values(again.backward(dy)), host_values(m.backward(dy)));
}

}  // namespace
}  // namespace engine::layers
