// DDP with real processes through gloo (label cpu): every test starts dist_test_worker ranks, through the
// launcher or with torchrun-style variables, and compares what they wrote with a single-process run of the
// concatenated batch computed here. float64 throughout, so "equal" means 1e-6 relative with a wide margin.

#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "data/distributed_sampler.h"
#include "dist/metrics.h"
#include "kernels/cpu/sgd.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/dist/dist_test_models.h"
#include "tests/dist/dist_test_util.h"

namespace engine::dist::testing {
namespace {

constexpr std::int64_t kBatch = 4;

// The single-process gradient of micro-batches `first_seed`.. (summed over `accum` of them) on the
// concatenated batch of `world` ranks, and optionally `steps` SGD steps.
struct Reference {
  std::vector<double> grads, params;
};

Reference single_process(const std::string& kind, int world, int steps, int accum) {
  layers::Model model = build_test_model(kind, nullptr);
  layers::SoftmaxCrossEntropy loss;
  Tensor momentum = Tensor::zeros(model.flat_parameters().shape(), DType::F64);
  const cpu::SgdOptions sgd{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  std::vector<double> sum;
  for (int step = 0; step < steps; ++step) {
    sum.assign(static_cast<std::size_t>(model.flat_gradients().numel()), 0.0);
    for (int k = 0; k < accum; ++k) {
      const auto seed = static_cast<std::uint64_t>(100 + step * accum + k);
      const Tensor x = make_inputs(0, world * kBatch, seed);
      const Tensor labels = make_labels(0, world * kBatch, seed);
      loss.forward(model.context(), model.forward(x, layers::Mode::Train), labels);
      model.backward(loss.backward());
      const std::vector<double> g = values(model.flat_gradients());
      for (std::size_t i = 0; i < g.size(); ++i) sum[i] += g[i];
    }
    std::copy(sum.begin(), sum.end(), model.flat_gradients().data<double>());
    cpu::sgd_step<double>(sgd, model.flat_parameters().data<double>(), model.flat_gradients().data<double>(),
                          momentum.data<double>(), model.flat_parameters().numel(), step == 0);
  }
  return {sum, values(model.flat_parameters())};
}

void expect_success(const LaunchResult& r) { ASSERT_EQ(r.exit_code, 0) << r.message; }

void check_one_step_gradients(const std::string& kind, int world) {
  const std::string dir = scratch_dir();
  expect_success(launch(world, "grads", {"model=" + kind, "out=" + dir}));
  const Reference ref = single_process(kind, world, 1, 1);
  for (int r = 0; r < world; ++r) {
    const RankResult got = read_rank(dir, r);
    expect_close(got.grads, ref.grads, 1e-6, kind + " rank " + std::to_string(r) + " gradient");
    EXPECT_GT(got.allreduce_count, 1) << "the test models should span several buckets";
  }
}

TEST(Ddp, OneStepGradientsEqualTheConcatenatedBatchWorld2) { check_one_step_gradients("plain", 2); }
TEST(Ddp, OneStepGradientsEqualTheConcatenatedBatchWorld3) { check_one_step_gradients("plain", 3); }
TEST(Ddp, SyncBatchNormGradientsEqualTheConcatenatedBatchWorld2) { check_one_step_gradients("syncbn", 2); }
TEST(Ddp, SyncBatchNormGradientsEqualTheConcatenatedBatchWorld3) { check_one_step_gradients("syncbn", 3); }

TEST(Ddp, AfterNStepsWeightsAreBitwiseEqualAndFollowTheSingleProcessRun) {
  for (const std::string kind : {"plain", "syncbn"}) {
    const int world = 3, steps = 5;
    const std::string dir = scratch_dir();
    expect_success(launch(world, "train", {"model=" + kind, "out=" + dir, "steps=" + std::to_string(steps)}));
    const RankResult r0 = read_rank(dir, 0);
    for (int r = 1; r < world; ++r) EXPECT_EQ(read_rank(dir, r).params, r0.params) << kind << " rank " << r;
    expect_close(r0.params, single_process(kind, world, steps, 1).params, 1e-9, kind + " parameters");
  }
}

TEST(Ddp, TorchrunStyleVariablesWork) {
  const std::string dir = scratch_dir();
  const SpawnResult s = spawn_torchrun_style(2, "grads", {"model=plain", "out=" + dir});
  ASSERT_FALSE(s.timed_out);
  for (int st : s.statuses) EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;
  const Reference ref = single_process("plain", 2, 1, 1);
  for (int r = 0; r < 2; ++r)
    expect_close(read_rank(dir, r).grads, ref.grads, 1e-6, "torchrun-style gradient");
}

TEST(Ddp, AccumulationAllReducesOncePerKMicroBatches) {
  const int world = 2, k = 3;
  const std::string dir = scratch_dir();
  expect_success(launch(world, "grads", {"model=plain", "out=" + dir, "accum=" + std::to_string(k)}));
  const std::string one = scratch_dir();
  expect_success(launch(world, "grads", {"model=plain", "out=" + one}));
  const Reference ref = single_process("plain", world, 1, k);
  for (int r = 0; r < world; ++r) {
    const RankResult got = read_rank(dir, r);
    // The same number of bucket all-reduces as a single step: only the last micro-batch communicated.
    EXPECT_EQ(got.allreduce_count, read_rank(one, r).allreduce_count);
    expect_close(got.grads, ref.grads, 1e-6, "accumulated gradient");
  }
}

TEST(Ddp, Bf16CompressionStaysCloseToTheExactAverage) {
  const int world = 2;
  const std::string dir = scratch_dir();
  expect_success(launch(world, "grads", {"model=plain", "out=" + dir, "bf16=1", "dtype=f32"}));
  const Reference ref = single_process("plain", world, 1, 1);
  double largest = 0.0;
  for (double g : ref.grads) largest = std::max(largest, std::abs(g));
  for (int r = 0; r < world; ++r) {
    const RankResult got = read_rank(dir, r);
    ASSERT_EQ(got.grads.size(), ref.grads.size());
    // Each rank's bucket and the running sum are rounded to bf16 (2^-9 relative to the PARTS, which may
    // cancel in the sum): compare as vectors, and each element against the largest gradient.
    double err2 = 0.0, ref2 = 0.0;
    for (std::size_t i = 0; i < got.grads.size(); ++i) {
      err2 += (got.grads[i] - ref.grads[i]) * (got.grads[i] - ref.grads[i]);
      ref2 += ref.grads[i] * ref.grads[i];
      EXPECT_NEAR(got.grads[i], ref.grads[i], 4e-3 * largest) << "element " << i;
    }
    EXPECT_LT(std::sqrt(err2 / ref2), 5e-3);
    EXPECT_EQ(got.grads, read_rank(dir, 0).grads) << "ranks disagree";
  }
  // float64 gradients are refused with a message instead.
  EXPECT_NE(launch(world, "grads", {"model=plain", "bf16=1"}).exit_code, 0);
}

TEST(Ddp, AKilledRankEndsEveryProcessAndIsNamed) {
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult r = launch(3, "kill", {"victim=1", "kill_step=3", "timeout_ms=5000"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 60.0);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.failed_rank, 1) << r.message;
  EXPECT_NE(r.message.find("rank 1"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("signal 9"), std::string::npos) << r.message;
}

// A stopped rank (SIGSTOP) exits nothing: its peers time out and report a peer failure, and the launcher
// names the stopped rank as the cause (found unnamed by scripts/faults.sh), then ends it too.
TEST(Ddp, AStoppedRankEndsEveryProcessAndIsNamed) {
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult r = launch(3, "stop", {"victim=1", "kill_step=3", "timeout_ms=3000"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 60.0);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.failed_rank, 1) << r.message;
  EXPECT_NE(r.message.find("rank 1 (pid "), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("was stopped (SIGSTOP or a debugger)"), std::string::npos) << r.message;
}

TEST(Ddp, AKilledRankWithoutTheLauncherStillEndsEveryProcess) {
  const SpawnResult s = spawn_torchrun_style(3, "kill", {"victim=2", "kill_step=2", "timeout_ms=5000"},
                                             std::chrono::seconds(60));
  EXPECT_FALSE(s.timed_out);
  EXPECT_LT(s.seconds, 60.0);
  EXPECT_TRUE(WIFSIGNALED(s.statuses[2]) && WTERMSIG(s.statuses[2]) == SIGKILL);
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(WIFEXITED(s.statuses[static_cast<std::size_t>(r)]) &&
                WEXITSTATUS(s.statuses[static_cast<std::size_t>(r)]) != 0)
        << "rank " << r << " status " << s.statuses[static_cast<std::size_t>(r)];
  }
}

TEST(Ddp, MismatchedModelsAreRefused) {
  const LaunchResult r = launch(2, "mismatch", {});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.message.find("rank"), std::string::npos);
}

TEST(Ddp, UnevenEvaluationGivesTheSingleProcessAccuracyExactly) {
  const int world = 3;
  const std::int64_t n = 10000;
  const std::string dir = scratch_dir();
  expect_success(launch(world, "eval", {"out=" + dir, "n=" + std::to_string(n)}));
  const std::vector<double> got = read_doubles(dir + "/eval.bin");
  ASSERT_EQ(got.size(), 3u);

  layers::Model model = build_test_model("plain", nullptr);
  layers::SoftmaxCrossEntropy loss;
  EvalTotals single;
  for (std::int64_t b = 0; b < n; b += 500) {
    const std::int64_t count = std::min<std::int64_t>(500, n - b);
    // Sample i's values do not depend on the batch it is drawn in (make_inputs indexes by sample).
    const Tensor x = make_inputs(b, count, 7);
    const Tensor labels = make_labels(b, count, 7);
    loss.forward(model.context(), model.forward(x, layers::Mode::Eval), labels,
                 {&single.loss_sum, &single.correct});
    single.count += count;
  }
  EXPECT_EQ(static_cast<std::int64_t>(got[2]), n);
  EXPECT_EQ(static_cast<std::int64_t>(got[1]), single.correct);
  EXPECT_EQ(got[1] / got[2], single.accuracy());
  EXPECT_NEAR(got[0], single.loss_sum, 1e-9 * std::abs(single.loss_sum));
}

}  // namespace
}  // namespace engine::dist::testing
