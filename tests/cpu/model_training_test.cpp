// End to end on the CPU: SGD (kernels/cpu/sgd.h, one call over the model's flat parameter and gradient
// buffers) on a fixed batch must drive the loss down, and two runs from the same seeds must be bitwise equal.

#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/sgd.h"
#include "layers/model.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

using testing::cpu_context;
using testing::host_values;

// Trains the small test net for `steps` SGD steps on one fixed batch; returns the loss of every step.
std::vector<double> train_fixed_batch(int steps, std::vector<double>* final_params = nullptr) {
  Model m("small_net", testing::small_test_net(), {3, 8, 8});
  m.finalize(cpu_context(DType::F32, /*dropout_seed=*/5), /*init_seed=*/17);
  const Tensor x = testing::random_tensor({16, 3, 8, 8}, DType::F32, 31);
  const Tensor labels = testing::random_labels(16, 3, 32);
  SoftmaxCrossEntropy loss;
  cpu::SgdOptions sgd{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  Tensor momentum = Tensor::zeros(m.flat_parameters().shape(), DType::F32);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    const Tensor logits = m.forward(x, Mode::Train);
    losses.push_back(host_values(loss.forward(m.context(), logits, labels))[0]);
    m.backward(loss.backward());
    cpu::sgd_step<float>(sgd, m.flat_parameters().data<float>(), m.flat_gradients().data<float>(),
                         momentum.data<float>(), m.flat_parameters().numel(), step == 0);
  }
  if (final_params != nullptr) *final_params = host_values(m.flat_parameters());
  return losses;
}

TEST(ModelTraining, SgdOnAFixedBatchReducesTheLoss) {
  std::vector<double> params_a, params_b;
  const std::vector<double> losses = train_fixed_batch(20, &params_a);
  // ln 3 = 1.0986 at chance; 16 samples, 3 classes and ~800 parameters: the batch can be memorized.
  EXPECT_NEAR(losses.front(), 1.1, 0.3);
  EXPECT_LT(losses.back(), 0.5 * losses.front())
      << "loss went from " << losses.front() << " to " << losses.back();
  // Deterministic: the same seeds give the same bits (init, dropout masks, reductions).
  EXPECT_EQ(train_fixed_batch(20, &params_b), losses);
  EXPECT_EQ(params_a, params_b);
}

}  // namespace
}  // namespace engine::layers
