#pragma once
// Shared by the fusion tests (batchnorm_relu_fusion_test.cpp, conv_bias_fold_test.cpp): poisoned outputs, the
// one-rounding comparison of a fused float32 kernel with the float64 reference of the unfused ops, and one
// training step of a zoo model with its loss, logits, gradients and buffers.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::fusion_testing {

// float32's unit roundoff, 2^-24.
inline constexpr double kEps32 = 0x1p-24;

// An output buffer filled with 0xFF bytes (a NaN in every element) before the call: an element the kernel
// skips shows.
inline std::vector<float> poisoned(std::size_t n) {
  std::vector<float> v(n);
  std::memset(v.data(), 0xFF, n * sizeof(float));
  return v;
}

inline std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// The fast kernels compute in double from the same float inputs as the reference and round each output to
// float once; the only other difference is the order of the double sums (vectorised), whose error is about
// M * 2^-53 times the terms' size (M <= 1e5 values of size <= 10 here: < 1e-9). So each output is within
// one float rounding of the float64 reference (2^-24 relative; 2 * 2^-24 leaves room for the kink of
// fmaf-free double arithmetic) plus that 1e-9.
inline void expect_near_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                  const char* what) {
  ASSERT_EQ(got.size(), ref.size());
  int bad = 0;
  for (std::size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double tol = 2.0 * kEps32 * std::fabs(ref[i]) + 1e-9;
    if (!(std::fabs(static_cast<double>(got[i]) - ref[i]) <= tol)) {  // also fails on NaN (a poisoned hole)
      ADD_FAILURE() << what << "[" << i << "]: fused " << got[i] << " vs reference " << ref[i];
      ++bad;
    }
  }
}

// A zoo model (3 input channels, 10 classes, side x side) finalized on the CPU, fusion on or off.
inline layers::Model zoo_model(const std::string& name, bool fusion, DType dtype, int side = 32) {
  const int channels = name == "mnist_cnn" ? 1 : 3;
  layers::Model m = layers::build_model(name, channels, 10, side, side);
  m.set_fusion(fusion);
  m.finalize(layers::testing::cpu_context(dtype, /*dropout_seed=*/9), /*init_seed=*/11);
  return m;
}

struct StepResult {
  double loss;
  std::vector<double> logits, grads, buffers;
};

// One forward and backward. Backward overwrites every gradient: they are poisoned (NaN) first, so one left
// unwritten (a folded bias's 0) shows.
inline StepResult step(layers::Model& m, const Tensor& x, const Tensor& labels, layers::Mode mode) {
  using layers::testing::host_values;
  for (const layers::Parameter& p : m.parameters()) {
    Tensor grad = p.grad;
    grad.fill_bytes(0xFF);
  }
  layers::SoftmaxCrossEntropy loss;
  const Tensor logits = m.forward(x, mode);
  const double l = host_values(loss.forward(m.context(), logits, labels))[0];
  m.backward(loss.backward());
  return {l, host_values(logits), host_values(m.flat_gradients()), host_values(m.flat_buffers())};
}

// Element ranges [begin, begin + n) of a flat buffer.
using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;

inline bool in_ranges(std::size_t i, const Ranges& ranges) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [i](const auto& r) { return i >= r.first && i < r.first + r.second; });
}

// a (fused) within 1e-5 of the largest |b| (unfused) elementwise, outside `skip`. The fused and unfused
// float32 kernels do the same double arithmetic on the same float values up to where a vectorised sum
// associates differently or a folded bias enters, which changes an output by about one float rounding
// (2^-24 relative); that propagates through the following float32 layers (conv and linear sums of up to 4608
// terms) at most proportionally: 1e-5 of the largest value bounds it by two orders of magnitude. Dropout
// masks are the same (same seed, same call count).
inline void expect_close_to(const std::vector<double>& a, const std::vector<double>& b, const char* what,
                            const std::string& name, const Ranges& skip = {}) {
  ASSERT_EQ(a.size(), b.size());
  double scale = 0.0;
  for (const double v : b) scale = std::max(scale, std::fabs(v));
  int bad = 0;
  for (std::size_t i = 0; i < a.size() && bad < 5; ++i) {
    if (in_ranges(i, skip)) continue;
    if (!(std::fabs(a[i] - b[i]) <= 1e-5 * scale)) {
      ADD_FAILURE() << name << " " << what << "[" << i << "]: fused " << a[i] << " vs unfused " << b[i];
      ++bad;
    }
  }
}

}  // namespace engine::fusion_testing
