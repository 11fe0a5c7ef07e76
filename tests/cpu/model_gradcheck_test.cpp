// Whole-model gradient checks: every zoo model's backward (loss included, BatchNorm in TRAIN mode, dropout
// with fixed masks) against central differences, in float64 on the CPU (the layers run the reference
// kernels' double instantiation when the model is finalized with DType::F64).
//
// A model is too big to perturb element by element (each element costs three forward passes), so the zoo
// models are checked along random directions, one per layer (layer_test_util.h: every element of the layer's
// parameters at once, an error in any of them shows unless it is orthogonal to a random direction), plus
// sampled coordinates where a forward pass is cheap. A small net with every layer kind is checked element by
// element, whole.
//
// Step and tolerance. With step h the central difference has truncation error ~h^2 |f'''| and rounding error
// ~eps_f / h, where eps_f, the rounding of the whole forward in double, is ~1e-15 relative to the loss (sums
// of a few thousand terms, each rounded at 2^-53). Deep ReLU/max-pool nets add a third error: a step that
// moves a pre-activation across 0 (or reorders a max-pool window) adds a kink to the difference; the
// checker skips elements where the one-sided differences disagree, but a small crossing can slip below that
// test. Its chance grows with h, so the step is small: h = 1e-6 puts the rounding error near 1e-9 and keeps
// crossings rare; tolerance 1e-6 (relative to max(|a|, |n|, 1)) leaves a thousandfold margin over the
// rounding while a wrong gradient (a dropped term, a wrong slice, a missing branch) is off by 1e-3 or more.

#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>

#include "layers/models.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using testing::check_model_gradients;
using testing::CheckKind;
using testing::cpu_context;
using testing::ModelCheck;
using testing::random_labels;
using testing::random_tensor;

struct Timer {
  const char* what;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  ~Timer() {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ timing ] %s: %.2f s\n", what, s);
  }
};

// group_depth: -1 per layer, 0 per parameter, 2 per residual block ("layer2.0").
ModelCheck directions(int group_depth = -1) {
  ModelCheck c;
  c.kind = CheckKind::Directions;
  c.group_depth = group_depth;
  c.options.step = 1e-6;
  c.options.tolerance = 1e-6;
  return c;
}

ModelCheck coordinates(std::size_t per_tensor) {
  ModelCheck c;
  c.kind = CheckKind::Coordinates;
  c.options.step = 1e-6;
  c.options.tolerance = 1e-6;
  c.options.max_elements_per_input = per_tensor;
  return c;
}

void expect_ok(const engine::testing::GradCheckResult& r, const char* what) {
  EXPECT_TRUE(r.ok) << what << ":\n" << r.report;
  EXPECT_GT(r.checked, 0u) << what;
  std::printf("[ gradchk ] %s: %zu checked, %zu skipped, worst relative error %.2e\n", what, r.checked,
              r.skipped, r.worst_error);
}

Model finalized_f64(Model m, std::uint64_t seed = 3) {
  m.finalize(cpu_context(DType::F64), seed);
  return m;
}

TEST(ModelGradCheck, SmallNetEveryElement) {
  Timer t{"small net, every element"};
  Model m = finalized_f64(Model("small_net", testing::small_test_net(), {3, 8, 8}));
  const Tensor x = random_tensor({2, 3, 8, 8}, DType::F64, 21);
  const Tensor labels = random_labels(2, 3, 22);
  expect_ok(check_model_gradients(m, x, labels, coordinates(0)), "small net, every element");
  expect_ok(check_model_gradients(m, x, labels, directions(0)), "small net, directions");
}

TEST(ModelGradCheck, MnistCnn) {
  Timer t{"mnist_cnn"};
  Model m = finalized_f64(build_model("mnist_cnn", 1, 10, 28, 28));
  const Tensor x = random_tensor({2, 1, 28, 28}, DType::F64, 23);
  const Tensor labels = random_labels(2, 10, 24);
  expect_ok(check_model_gradients(m, x, labels, directions(0)), "mnist_cnn, directions");
  expect_ok(check_model_gradients(m, x, labels, coordinates(2)), "mnist_cnn, 2 coordinates per tensor");
}

TEST(ModelGradCheck, Cnn3) {
  Timer t{"cnn3"};
  Model m = finalized_f64(build_model("cnn3", 3, 10, 32, 32));
  const Tensor x = random_tensor({2, 3, 32, 32}, DType::F64, 25);
  const Tensor labels = random_labels(2, 10, 26);
  expect_ok(check_model_gradients(m, x, labels, directions()), "cnn3, directions per layer");
}

TEST(ModelGradCheck, Vgg6) {
  Timer t{"vgg6"};
  Model m = finalized_f64(build_model("vgg6", 3, 10, 32, 32));
  const Tensor x = random_tensor({1, 3, 32, 32}, DType::F64, 27);
  const Tensor labels = random_labels(1, 10, 28);
  // Two groups, "features" (the six conv/BatchNorm pairs) and "classifier", plus the input: a random
  // direction through 3.2 million parameters still exposes a wrong gradient in any one tensor, because the
  // float64 check resolves ~1e-9 relative and a wiring error moves the derivative by far more. Per-layer
  // directions over the same layer kinds run on cnn3 above, where a forward pass is cheaper.
  expect_ok(check_model_gradients(m, x, labels, directions(1)), "vgg6, directions per stage");
}

// One 10x10 sample: stages of 10x10, 5x5, 3x3 and 2x2 (odd sizes through the stride-2 convolutions), so the
// last BatchNorms still see 2 * 2 = 4 values per channel. On 8x8 inputs the last stage is 1x1 and a batch of
// 2 gives them 2 values, where the normalized output is +-1 up to eps and the loss is so curved that no
// finite difference is accurate. (BatchNorm's coupling across samples is checked by the batch-2 cases above.)
TEST(ModelGradCheck, Resnet18) {
  Timer t{"resnet18"};
  Model m = finalized_f64(build_model("resnet18", 3, 10, 10, 10));
  const Tensor x = random_tensor({1, 3, 10, 10}, DType::F64, 29);
  const Tensor labels = random_labels(1, 10, 30);
  expect_ok(check_model_gradients(m, x, labels, directions(2)), "resnet18, directions per block");
}

}  // namespace
}  // namespace engine::layers
