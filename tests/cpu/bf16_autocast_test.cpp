// bf16 autocast (--precision bf16, kernels/ops/autocast_bf16.h) on the CPU, where it is an exact emulation
// (oneDNN's native bf16 convolutions on an avx512_bf16 host: the same bound, checked that they ran):
//  - Conv2d and Linear forward and backward against the float64 reference run on the bf16-rounded inputs and
//    weights (odd sizes, outputs poisoned with NaN first), and every rounded output is a bf16 value;
//  - the model's bf16 weight mirror equals the rounded fp32 master after SGD steps, a checkpoint load and an
//    EMA swap, and Model::check_bf16_mirror catches a writer that forgot it;
//  - cnn_train --precision bf16 learns on the tiny data set and its checkpoint is fp32 with the same names as
//    an fp32 run's; a bad --precision is refused by name.
//
// Tolerances: tests/common/bf16_tolerance.h (bf16 output rounding 2^-8 relative plus the fp32 summation
// bound over the reduction length).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/philox.h"
#include "core/tensor.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_weights_gemm.h"
#include "kernels/ops/conv2d.h"
#include "kernels/ops/linear.h"
#include "layers/models.h"
#include "optim/checkpoint.h"
#include "optim/ema.h"
#include "optim/safetensors.h"
#include "optim/sgd.h"
#include "tests/common/bf16_tolerance.h"
#include "tests/common/test_data.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine {
namespace {

namespace train = apps::testing;  // tests/cpu/cnn_train_test_util.h
using testing::abs_values;
using testing::bf16_matches;
using testing::bf16_rounded;
using testing::random_floats;

Tensor tensor_of(const std::vector<float>& v) {
  return Tensor::from_vector(v, {static_cast<std::int64_t>(v.size())});
}

Tensor bf16_mirror_of(const std::vector<float>& w) {
  Tensor m = Tensor::empty({static_cast<std::int64_t>(w.size())}, DType::BF16);
  cpu::cast_f32_to_bf16(w.data(), m.data<bfloat16>(), static_cast<std::int64_t>(w.size()));
  return m;
}

Tensor poisoned(std::size_t n) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(n)}, DType::F32);
  t.fill_bytes(0xFF, nullptr);  // NaN: an element the op does not write fails every check
  return t;
}

::testing::AssertionResult matches(const Tensor& got, const std::vector<double>& ref,
                                   const std::vector<double>& mag, std::int64_t terms, bool rounded) {
  return bf16_matches(got.to_vector<float>(), ref, mag, terms, rounded);
}

ExecutionContext bf16_context() {
  ExecutionContext ctx;
  ctx.autocast_bf16 = true;
  return ctx;
}

class Bf16Conv2d : public ::testing::TestWithParam<std::tuple<Conv2dShape, bool>> {};

TEST_P(Bf16Conv2d, ForwardAndBackwardAreTheReferenceOnRoundedOperands) {
  const auto [s, with_bias] = GetParam();
  const std::vector<float> x = random_floats(s.x_size(), 11), w = random_floats(s.w_size(), 12),
                           b = random_floats(static_cast<std::size_t>(s.k), 13),
                           dy = random_floats(s.y_size(), 14);
  const std::vector<double> xr = bf16_rounded(x), wr = bf16_rounded(w), dyr = bf16_rounded(dy);
  const std::vector<double> bd = bf16_rounded(b);
  const std::vector<double> xa = abs_values(xr), wa = abs_values(wr), dya = abs_values(dyr),
                            ba = abs_values(bd);
  const double* bias_ref = with_bias ? bd.data() : nullptr;
  std::vector<double> y_ref(s.y_size()), y_mag(s.y_size()), dx_ref(s.x_size()), dx_mag(s.x_size()),
      dw_ref(s.w_size()), dw_mag(s.w_size()), db_ref(static_cast<std::size_t>(s.k)),
      db_mag(static_cast<std::size_t>(s.k));
  cpu::conv2d_forward<double>(s, xr.data(), wr.data(), bias_ref, y_ref.data());
  cpu::conv2d_forward<double>(s, xa.data(), wa.data(), with_bias ? ba.data() : nullptr, y_mag.data());
  cpu::conv2d_backward<double>(s, xr.data(), wr.data(), dyr.data(), dx_ref.data(), dw_ref.data(),
                               db_ref.data());
  cpu::conv2d_backward<double>(s, xa.data(), wa.data(), dya.data(), dx_mag.data(), dw_mag.data(),
                               db_mag.data());

  const ExecutionContext ctx = bf16_context();
  const Tensor w_t = tensor_of(w), mirror = bf16_mirror_of(w), b_t = with_bias ? tensor_of(b) : Tensor();
  const Tensor y = poisoned(s.y_size()), dx = poisoned(s.x_size()), dw = poisoned(s.w_size()),
               db = with_bias ? poisoned(static_cast<std::size_t>(s.k)) : Tensor();
  ops::conv2d_forward(ctx, s, tensor_of(x), w_t, b_t, y, mirror);
  ops::conv2d_backward(ctx, s, tensor_of(x), w_t, tensor_of(dy), dx, dw, db, mirror);

  const std::int64_t per_output = static_cast<std::int64_t>(s.c) * s.r * s.s + (with_bias ? 1 : 0);
  const std::int64_t per_input = static_cast<std::int64_t>(s.k) * s.r * s.s;
  const std::int64_t per_weight = static_cast<std::int64_t>(s.n) * s.p() * s.q();
  EXPECT_TRUE(matches(y, y_ref, y_mag, per_output, true)) << "y";
  EXPECT_TRUE(matches(dx, dx_ref, dx_mag, per_input, true)) << "dx";
  EXPECT_TRUE(matches(dw, dw_ref, dw_mag, per_weight, true)) << "dw";
  if (with_bias) {
    EXPECT_TRUE(matches(db, db_ref, db_mag, per_weight, true)) << "db";
  }
  // On an avx512_bf16 host that was oneDNN's bf16-typed primitives (kernels/cpu_fast/conv2d.h: a bf16 plan
  // of this shape ran each direction), not the emulation: the same bound holds for both (only the fp32
  // summation order differs).
  if (cpu_fast::native_bf16()) {
    for (const char* d : {"fwd", "bwd_data", "bwd_weights"})
      EXPECT_FALSE(cpu_fast::conv2d_impl(s, with_bias, d, true).empty()) << d;
    // dw: oneDNN's bf16 kernel, or the im2col GEMM (kernels/cpu_fast/conv2d_weights_gemm.h: oneDNN's bf16
    // matmul) where the rule says (both sum the same exact products in float32, so the bound above covers
    // both; the cases below take each way).
    const std::string dw_impl = cpu_fast::conv2d_impl(s, with_bias, "bwd_weights", true);
    const bool gemm = cpu_fast::weights_grad_gemm(s, true);
    EXPECT_EQ(dw_impl == "engine:im2col_gemm", gemm) << dw_impl;
    if (!gemm) {
      EXPECT_NE(dw_impl.find("bf16"), std::string::npos) << dw_impl;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    OddSizes, Bf16Conv2d,
    ::testing::Values(std::make_tuple(testing::square_conv(3, 5, 9, 7, 6, 3, 2, 1), true),
                      std::make_tuple(testing::square_conv(2, 3, 5, 6, 4, 1, 1, 0), false),
                      std::make_tuple(testing::square_conv(2, 17, 11, 13, 9, 3, 1, 1), true),
                      // 3x3 stride 1 on a 6x5 output: dw through the im2col GEMM (outputs under 8x8)
                      std::make_tuple(testing::square_conv(2, 16, 6, 5, 8, 3, 1, 1), false)));

class Bf16Linear : public ::testing::TestWithParam<std::tuple<LinearShape, bool>> {};

TEST_P(Bf16Linear, ForwardAndBackwardAreTheReferenceOnRoundedOperands) {
  const auto [s, with_bias] = GetParam();
  const std::vector<float> x = random_floats(s.x_size(), 21), w = random_floats(s.w_size(), 22),
                           b = random_floats(static_cast<std::size_t>(s.out_features), 23),
                           dy = random_floats(s.y_size(), 24);
  const std::vector<double> xr = bf16_rounded(x), wr = bf16_rounded(w), dyr = bf16_rounded(dy);
  const std::vector<double> bd = bf16_rounded(b);
  const std::vector<double> xa = abs_values(xr), wa = abs_values(wr), dya = abs_values(dyr),
                            ba = abs_values(bd);
  const auto outs = static_cast<std::size_t>(s.out_features);
  std::vector<double> y_ref(s.y_size()), y_mag(s.y_size()), dx_ref(s.x_size()), dx_mag(s.x_size()),
      dw_ref(s.w_size()), dw_mag(s.w_size()), db_ref(outs), db_mag(outs);
  cpu::linear_forward<double>(s, xr.data(), wr.data(), with_bias ? bd.data() : nullptr, y_ref.data());
  cpu::linear_forward<double>(s, xa.data(), wa.data(), with_bias ? ba.data() : nullptr, y_mag.data());
  cpu::linear_backward<double>(s, xr.data(), wr.data(), dyr.data(), dx_ref.data(), dw_ref.data(),
                               db_ref.data());
  cpu::linear_backward<double>(s, xa.data(), wa.data(), dya.data(), dx_mag.data(), dw_mag.data(),
                               db_mag.data());

  const ExecutionContext ctx = bf16_context();
  const Tensor w_t = tensor_of(w), mirror = bf16_mirror_of(w), b_t = with_bias ? tensor_of(b) : Tensor();
  const Tensor y = poisoned(s.y_size()), dx = poisoned(s.x_size()), dw = poisoned(s.w_size()),
               db = with_bias ? poisoned(outs) : Tensor();
  ops::linear_forward(ctx, s, tensor_of(x), w_t, b_t, y, mirror);
  ops::linear_backward(ctx, s, tensor_of(x), w_t, tensor_of(dy), dx, dw, db, mirror);

  EXPECT_TRUE(matches(y, y_ref, y_mag, s.in_features + (with_bias ? 1 : 0), true)) << "y";
  EXPECT_TRUE(matches(dx, dx_ref, dx_mag, s.out_features, true)) << "dx";
  EXPECT_TRUE(matches(dw, dw_ref, dw_mag, s.n, true)) << "dw";
  if (with_bias) {
    EXPECT_TRUE(matches(db, db_ref, db_mag, s.n, true)) << "db";
  }
}

INSTANTIATE_TEST_SUITE_P(
    OddSizes, Bf16Linear,
    ::testing::Values(std::make_tuple(LinearShape{.n = 5, .in_features = 37, .out_features = 11}, true),
                      std::make_tuple(LinearShape{.n = 3, .in_features = 129, .out_features = 7}, false),
                      std::make_tuple(LinearShape{.n = 33, .in_features = 300, .out_features = 10}, true)));

TEST(Bf16Autocast, TheOpsRefuseAMissingOrMismatchedMirror) {
  const ExecutionContext ctx = bf16_context();
  const LinearShape s{.n = 2, .in_features = 3, .out_features = 4};
  const Tensor x = tensor_of(random_floats(s.x_size(), 1)), w = tensor_of(random_floats(s.w_size(), 2));
  const Tensor y = poisoned(s.y_size());
  EXPECT_THROW(ops::linear_forward(ctx, s, x, w, Tensor(), y), Error);
  EXPECT_THROW(ops::linear_forward(ctx, s, x, w, Tensor(), y, bf16_mirror_of(random_floats(5, 3))), Error);
}

// The mirror against the rounded master, element by element (independently of check_bf16_mirror).
::testing::AssertionResult mirror_is_fresh(const layers::Model& model) {
  const std::vector<float> master = model.flat_parameters().to_vector<float>();
  const Tensor& mirror = model.flat_parameters_bf16();
  if (!mirror.defined()) return ::testing::AssertionFailure() << "no mirror";
  const bfloat16* m = mirror.data<bfloat16>();
  for (std::size_t i = 0; i < master.size(); ++i) {
    if (to_bfloat16(master[i]).bits != m[i].bits) {
      return ::testing::AssertionFailure()
             << "element " << i << ": master " << master[i] << ", mirror " << from_bfloat16(m[i]);
    }
  }
  return ::testing::AssertionSuccess();
}

layers::Model bf16_model() {
  layers::Model model = layers::build_model("cnn3", 3, 3, 32, 32);
  model.finalize(bf16_context(), 5);
  return model;
}

// Random gradients in every parameter's slot (the padding between them stays zero, as after a backward).
void fill_gradients(const layers::Model& model, std::uint64_t seed) {
  for (const layers::Parameter& p : model.parameters()) {
    const std::vector<float> g = random_floats(static_cast<std::size_t>(p.grad.numel()), seed++ * 1000);
    Tensor(p.grad).copy_from(tensor_of(g).view(p.grad.shape()), nullptr);
  }
}

TEST(Bf16Mirror, FollowsInitializationAndSgdSteps) {
  layers::Model model = bf16_model();
  ASSERT_TRUE(mirror_is_fresh(model)) << "after finalize";
  const std::vector<float> initial = model.flat_parameters().to_vector<float>();
  optim::Sgd sgd(model, {.momentum = 0.9, .weight_decay = 5e-4, .nesterov = true});
  for (int step = 0; step < 3; ++step) {
    fill_gradients(model, 100 + static_cast<std::uint64_t>(step));
    sgd.step(0.05);
    ASSERT_TRUE(mirror_is_fresh(model)) << "after SGD step " << step + 1;
  }
  EXPECT_NE(model.flat_parameters().to_vector<float>(), initial) << "the steps changed nothing";
  EXPECT_NO_THROW(model.check_bf16_mirror("test"));
}

TEST(Bf16Mirror, AStaleMirrorIsCaughtAndParametersWrittenRefreshesIt) {
  layers::Model model = bf16_model();
  const std::vector<float> p = random_floats(static_cast<std::size_t>(model.flat_parameters().numel()), 7);
  Tensor(model.flat_parameters()).copy_from(tensor_of(p).view(model.flat_parameters().shape()), nullptr);
  EXPECT_FALSE(mirror_is_fresh(model));
  try {
    model.check_bf16_mirror("after a raw write");
    FAIL() << "a stale mirror went unnoticed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("after a raw write: model 'cnn3': the bf16 mirror of '"),
              std::string::npos)
        << e.what();
  }
  model.parameters_written();
  EXPECT_TRUE(mirror_is_fresh(model));
}

TEST(Bf16Mirror, FollowsACheckpointLoadAndAnEmaSwap) {
  const std::string dir = train::temp_dir("bf16_mirror");
  layers::Model saved = bf16_model();
  optim::Sgd sgd(saved, {.momentum = 0.9});
  fill_gradients(saved, 31);
  sgd.step(0.1);
  optim::save_checkpoint(dir + "/c.safetensors", saved, &sgd, {.epoch = 1, .step = 1, .seed = 5});

  layers::Model loaded = layers::build_model("cnn3", 3, 3, 32, 32);
  loaded.finalize(bf16_context(), 6);  // other initial weights
  optim::load_checkpoint(dir + "/c.safetensors", loaded, nullptr, nullptr);
  EXPECT_EQ(loaded.flat_parameters().to_vector<float>(), saved.flat_parameters().to_vector<float>());
  EXPECT_TRUE(mirror_is_fresh(loaded)) << "after load_checkpoint";

  optim::WeightAverage ema(loaded, {.every_steps = 1, .total_steps = 10, .lookahead = false});
  ema.update(0.0, false);  // starts the average at the current weights
  fill_gradients(loaded, 32);
  optim::Sgd sgd2(loaded, {});
  sgd2.step(0.5);
  ema.update(0.5, /*copy_back=*/true);  // lookahead: the average is written into the weights
  EXPECT_TRUE(mirror_is_fresh(loaded)) << "after an EMA update with copy-back";
  fill_gradients(loaded, 33);
  sgd2.step(0.5);
  const std::vector<float> before_swap = loaded.flat_parameters().to_vector<float>();
  ema.swap_with_weights();
  ASSERT_NE(loaded.flat_parameters().to_vector<float>(), before_swap) << "the swap changed nothing";
  EXPECT_TRUE(mirror_is_fresh(loaded)) << "after swap_with_weights";
  ema.swap_with_weights();
  EXPECT_TRUE(mirror_is_fresh(loaded)) << "after swapping back";
}

// The "train_loss" values of a --metrics file, in order.
std::vector<double> train_losses(const std::string& metrics) {
  std::vector<double> out;
  const std::string key = "\"train_loss\":";
  for (std::size_t at = metrics.find(key); at != std::string::npos; at = metrics.find(key, at + 1)) {
    out.push_back(std::stod(metrics.substr(at + key.size())));
  }
  return out;
}

// A learning rate at which cnn3 learns this data in fp32 (at 0.05 it diverges after two epochs, fp32 or
// bf16 alike).
std::vector<std::string> tiny_bf16_args(const std::string& root, const std::string& dir,
                                        const char* precision, int epochs) {
  std::vector<std::string> args = train::tiny_folder_args(root, dir, "cnn3", 8, epochs);
  *std::find(args.begin(), args.end(), "0.05") = "0.01";  // --lr
  args.back() = precision;                                // tiny_folder_args ends with --precision fp32
  args.insert(args.end(), {"--cpu", "--metrics", dir + "/m.jsonl"});
  return args;
}

TEST(Bf16Training, CnnTrainLearnsAndItsCheckpointIsFp32WithTheSameNames) {
  const std::string root = train::tiny_folder_dataset("bf16_train");
  const std::string dir = train::temp_dir("bf16_train_out"), fp32_dir = train::temp_dir("bf16_train_fp32");
  const train::RunResult r = train::run_train(tiny_bf16_args(root, dir, "bf16", 3));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("| cpu bf16 |"), std::string::npos) << "the banner names the emulation:\n"
                                                              << r.output;
  const std::string metrics = train::file_bytes(dir + "/m.jsonl");
  EXPECT_NE(metrics.find("\"precision\":\"bf16\""), std::string::npos) << metrics;
  const std::vector<double> losses = train_losses(metrics);
  ASSERT_EQ(losses.size(), 3u) << metrics;
  EXPECT_LT(losses.back(), 0.1 * losses.front()) << "bf16 training did not learn:\n" << metrics;

  const train::RunResult fp32 = train::run_train(tiny_bf16_args(root, fp32_dir, "fp32", 1));
  ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
  const std::vector<double> fp32_losses = train_losses(train::file_bytes(fp32_dir + "/m.jsonl"));
  ASSERT_EQ(fp32_losses.size(), 1u);
  // Not a precision bound (one epoch of training amplifies rounding without a useful bound): a guard against
  // an emulation that still learns but computes something else. bf16 moved the first epoch's loss by 0.2%
  // here (0.3547 vs 0.3541).
  EXPECT_NEAR(losses.front(), fp32_losses.front(), 0.1 * fp32_losses.front());
  const optim::SafetensorsFile bf16_ckpt = optim::SafetensorsFile::read(dir + "/epoch3.safetensors");
  const optim::SafetensorsFile fp32_ckpt = optim::SafetensorsFile::read(fp32_dir + "/epoch1.safetensors");
  ASSERT_EQ(bf16_ckpt.entries().size(), fp32_ckpt.entries().size());
  for (const auto& [name, e] : fp32_ckpt.entries()) {
    const optim::SafetensorsFile::Entry* b = bf16_ckpt.find(name);
    ASSERT_NE(b, nullptr) << name << " is missing from the bf16 checkpoint";
    EXPECT_EQ(b->dtype, e.dtype) << name;
    EXPECT_EQ(b->shape, e.shape) << name;
  }
  // And it evaluates as an fp32 model.
  const train::RunResult eval =
      train::run_train({"--cpu", "--dataset", "folder:" + root, "--model", "cnn3", "--precision", "fp32",
                        "--eval-only", dir + "/epoch3.safetensors"});
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("Test Acc: "), std::string::npos) << eval.output;
}

TEST(Bf16Training, ABadPrecisionIsRefusedByName) {
  const train::RunResult r =
      train::run_train({"--cpu", "--dataset", "folder:/nonexistent", "--precision", "fp16"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--precision: 'fp16' is not one of fp32, tf32 or bf16"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace engine
