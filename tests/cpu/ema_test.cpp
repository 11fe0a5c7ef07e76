// The weight average (kernels/cpu/ema.h, kernels/cpu_fast/ema.h, optim/ema.h): the update by hand, the fast
// path bitwise equal to the reference, airbench94's schedule of updates and decays, the lookahead copy-back,
// and the average in a checkpoint (saved under PyTorch names, restored exactly).

#include "kernels/cpu/ema.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/cpu_fast/ema.h"
#include "optim/checkpoint.h"
#include "optim/ema.h"
#include "tests/common/gradcheck.h"
#include "tests/cpu/layer_test_util.h"

namespace engine {
namespace {

TEST(EmaKernel, KnownValuesByHand) {
  // ema = 1 + (1 - 0.75) * (3 - 1) = 1.5; ema = 2 + 0.25 * (-2 - 2) = 1.
  std::vector<double> ema = {1.0, 2.0}, x = {3.0, -2.0};
  cpu::ema_update<double>(0.75, ema.data(), x.data(), 2, false);
  EXPECT_EQ(ema, (std::vector<double>{1.5, 1.0}));
  EXPECT_EQ(x, (std::vector<double>{3.0, -2.0}));               // without copy-back the weights stay
  cpu::ema_update<double>(1.0, ema.data(), x.data(), 2, true);  // rho 1: keep the average, copy it back
  EXPECT_EQ(ema, (std::vector<double>{1.5, 1.0}));
  EXPECT_EQ(x, (std::vector<double>{1.5, 1.0}));
  cpu::ema_update<double>(0.0, ema.data(), (std::vector<double>{7.0, 8.0}).data(), 2,
                          false);  // rho 0: take x
  EXPECT_EQ(ema, (std::vector<double>{7.0, 8.0}));
  EXPECT_THROW(cpu::ema_update<double>(1.5, ema.data(), x.data(), 2, false), Error);
  EXPECT_THROW(cpu::ema_update<double>(std::nan(""), ema.data(), x.data(), 2, false), Error);
}

TEST(EmaKernel, FastPathIsBitwiseTheReference) {
  // The same double operations on both sides; sizes below and above the OpenMP threshold.
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{37}, std::int64_t{40001}}) {
    const std::vector<double> e0 = testing::random_values(static_cast<std::size_t>(n), 71);
    const std::vector<double> x0 = testing::random_values(static_cast<std::size_t>(n), 72);
    for (const bool copy_back : {false, true}) {
      std::vector<float> e(e0.begin(), e0.end()), x(x0.begin(), x0.end()), e_ref = e, x_ref = x;
      cpu_fast::ema_update(0.8573749, e.data(), x.data(), n, copy_back);
      cpu::ema_update<float>(0.8573749, e_ref.data(), x_ref.data(), n, copy_back);
      EXPECT_EQ(std::memcmp(e.data(), e_ref.data(), e.size() * sizeof(float)), 0) << n;
      EXPECT_EQ(std::memcmp(x.data(), x_ref.data(), x.size() * sizeof(float)), 0) << n;
    }
  }
}

layers::Model small_model() {
  layers::Model m("small_net", layers::testing::small_test_net(), {3, 8, 8});
  m.finalize(layers::testing::cpu_context(DType::F64), 1);
  return m;
}

void add_to_all(const Tensor& t, double v) {
  double* p = t.data<double>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] += v;
}

TEST(WeightAverage, FollowsAirbenchsScheduleWithLookahead) {
  layers::Model m = small_model();
  optim::WeightAverage ema(m, {.every_steps = 2,
                               .start_step = 2,
                               .decay_base = 0.95,
                               .decay_pow = 3.0,
                               .total_steps = 10,
                               .lookahead = true});
  const std::vector<double> w0 = m.flat_parameters().to_vector<double>();
  EXPECT_FALSE(ema.after_step(1));  // not a multiple of 2
  EXPECT_FALSE(ema.after_step(2));  // step 2 is the last of the epochs before the start
  EXPECT_FALSE(ema.initialized());
  EXPECT_FALSE(ema.after_step(3));
  EXPECT_TRUE(ema.after_step(4));  // the first due step copies the weights
  EXPECT_TRUE(ema.initialized());
  EXPECT_EQ(ema.parameters().to_vector<double>(), w0);
  add_to_all(m.flat_parameters(), 1.0);  // training moved every weight by 1
  EXPECT_TRUE(ema.after_step(6));
  // rho = 0.95^2 * (6/10)^3; the average moves by (1 - rho), and lookahead puts it into the weights.
  const double rho = 0.95 * 0.95 * 0.6 * 0.6 * 0.6;
  EXPECT_DOUBLE_EQ(ema.decay_at(6), rho);
  const std::vector<double> avg = ema.parameters().to_vector<double>();
  const std::vector<double> w = m.flat_parameters().to_vector<double>();
  for (std::size_t i = 0; i < w0.size(); ++i) {
    EXPECT_EQ(avg[i], w0[i] + (1.0 - rho) * ((w0[i] + 1.0) - w0[i])) << i;
    EXPECT_EQ(w[i], avg[i]) << i;
  }
  add_to_all(m.flat_parameters(), 0.5);
  ema.finish_epoch();  // the weights since the last update are dropped: the average goes in
  EXPECT_EQ(m.flat_parameters().to_vector<double>(), avg);
  EXPECT_EQ(ema.decay_at(20), 1.0);  // past the planned length rho is capped at 1: the average holds
}

TEST(WeightAverage, AverageModeKeepsTheWeightsAndSwaps) {
  layers::Model m = small_model();
  optim::WeightAverage ema(m, {.every_steps = 1, .total_steps = 4, .lookahead = false});
  ema.after_step(1);
  add_to_all(m.flat_parameters(), 2.0);
  const std::vector<double> w = m.flat_parameters().to_vector<double>();
  ema.after_step(2);
  EXPECT_EQ(m.flat_parameters().to_vector<double>(), w);  // not copied back
  const std::vector<double> avg = ema.parameters().to_vector<double>();
  EXPECT_NE(avg, w);
  ema.swap_with_weights();
  EXPECT_EQ(m.flat_parameters().to_vector<double>(), avg);
  ema.swap_with_weights();
  EXPECT_EQ(m.flat_parameters().to_vector<double>(), w);
}

TEST(WeightAverage, CheckpointHoldsTheAverageUnderPyTorchNames) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ema_ckpt_" + std::to_string(::getpid()) + ".safetensors"))
          .string();
  layers::Model m = small_model();
  optim::WeightAverage ema(m, {.every_steps = 1, .total_steps = 4, .lookahead = false});
  ema.after_step(1);
  add_to_all(m.flat_parameters(), 2.0);
  add_to_all(m.flat_buffers(), 0.25);
  ema.after_step(2);
  optim::save_checkpoint(path, m, nullptr, optim::TrainingState{.epoch = 1, .step = 2}, {}, &ema);
  const optim::SafetensorsFile file = optim::SafetensorsFile::read(path);
  for (const layers::Parameter& p : m.parameters()) {
    EXPECT_NE(file.find(std::string(optim::kEmaPrefix) + p.name), nullptr) << p.name;
  }
  for (const layers::Buffer& b : m.buffers()) {
    EXPECT_NE(file.find(std::string(optim::kEmaPrefix) + b.name), nullptr) << b.name;
  }

  layers::Model fresh = small_model();
  optim::WeightAverage restored(fresh, {.every_steps = 1, .total_steps = 4, .lookahead = false});
  const optim::LoadedCheckpoint loaded = optim::load_checkpoint(path, fresh, nullptr, &restored);
  EXPECT_TRUE(loaded.restored_ema);
  EXPECT_TRUE(restored.initialized());
  // Every parameter and buffer range is restored bit for bit (the padding between them is not state).
  for (const layers::Parameter& p : m.parameters()) {
    EXPECT_EQ(restored.parameters().flat_range(p.offset, p.value.shape()).to_vector<double>(),
              ema.parameters().flat_range(p.offset, p.value.shape()).to_vector<double>())
        << p.name;
  }
  for (const layers::Buffer& b : m.buffers()) {
    EXPECT_EQ(restored.buffers().flat_range(b.offset, b.value.shape()).to_vector<double>(),
              ema.buffers().flat_range(b.offset, b.value.shape()).to_vector<double>())
        << b.name;
  }
  // Without a WeightAverage the file still loads as weights (the average is optional state).
  layers::Model plain = small_model();
  EXPECT_FALSE(optim::load_checkpoint(path, plain, nullptr).restored_ema);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace engine
