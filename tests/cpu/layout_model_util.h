#pragma once
// One training step of a zoo model in a given layout, and the comparison of two such steps (logits, loss,
// gradients, parameters after SGD): shared by the layout tests (nhwc_model_test.cpp, blocked_model_test.cpp).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/sgd.h"
#include "layers/models.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers::layout_model {

using testing::host_values;

struct Step {
  std::vector<double> logits, loss, grads, params;
};

inline ExecutionContext context(DType dtype, Layout layout, bool bf16 = false) {
  ExecutionContext c = testing::cpu_context(dtype, /*dropout_seed=*/5);
  c.layout = layout;
  c.autocast_bf16 = bf16;
  return c;
}

inline Model finalized(const std::string& name, int hw, DType dtype, Layout layout, bool bf16 = false) {
  Model m = build_model(name, 3, 10, hw, hw);
  m.finalize(context(dtype, layout, bf16), /*init_seed=*/17);
  return m;
}

// One step of the finalized model m (3 x hw x hw inputs, 10 classes).
template <typename T>
Step one_step_of(Model& m, int hw, DType dtype) {
  const Tensor x = testing::random_tensor({2, 3, hw, hw}, dtype, 31);  // NCHW, as the loaders give it
  const Tensor labels = testing::random_labels(2, 10, 32);
  SoftmaxCrossEntropy loss;
  Step s;
  const Tensor logits = m.forward(x, Mode::Train);
  s.logits = host_values(logits);
  s.loss = host_values(loss.forward(m.context(), logits, labels));
  m.backward(loss.backward());
  s.grads = host_values(m.flat_gradients());
  const cpu::SgdOptions sgd{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  Tensor momentum = Tensor::zeros(m.flat_parameters().shape(), dtype);
  cpu::sgd_step<T>(sgd, m.flat_parameters().data<T>(), m.flat_gradients().data<T>(), momentum.data<T>(),
                   m.flat_parameters().numel(), /*first_step=*/true);
  s.params = host_values(m.flat_parameters());
  return s;
}

// bf16: --precision bf16 (bf16 activations, fp32 master weights and gradients).
template <typename T>
Step one_step(const std::string& name, int hw, DType dtype, Layout layout, bool bf16 = false) {
  Model m = finalized(name, hw, dtype, layout, bf16);
  return one_step_of<T>(m, hw, dtype);
}

inline void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol,
                         const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 1e-30;
  for (double v : b) scale = std::max(scale, std::abs(v));
  double worst = 0.0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(a[i] - b[i]);
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  EXPECT_LE(worst, tol * scale) << what << ": worst difference at [" << at << "] " << a[at] << " vs " << b[at]
                                << " (largest magnitude " << scale << ")";
}

inline void compare(const Step& nhwc, const Step& nchw, double tol, const std::string& what) {
  expect_close(nhwc.logits, nchw.logits, tol, what + " logits");
  expect_close(nhwc.loss, nchw.loss, tol, what + " loss");
  expect_close(nhwc.grads, nchw.grads, tol, what + " gradients");
  expect_close(nhwc.params, nchw.params, tol, what + " parameters after SGD");
}

}  // namespace engine::layers::layout_model
