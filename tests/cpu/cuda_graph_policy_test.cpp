// --cuda-graph (apps/train/cuda_graph_policy.h): the one list of what keeps a training step eager, what on,
// auto and off do with it, the flag's parsing, the partial-batch rule and its sample counts, and the CPU
// refusals of the device step state's pointers (dropout offset, loss slot, loader positions). The graphs
// themselves run in tests/gpu/cuda_graph_train_test.cpp.
#include "apps/train/cuda_graph_policy.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "apps/train/train_config.h"
#include "apps/train_flags.h"
#include "core/error.h"
#include "data/loader.h"
#include "kernels/ops/dropout.h"
#include "kernels/ops/softmax_cross_entropy.h"
#include "tests/cpu/cnn_train_test_util.h"
#include "tests/cpu/data_test_util.h"

namespace engine::apps {
namespace {

// Everything a graph needs: a CUDA device, the resident loader, no blocker.
CudaGraphFacts capturable() {
  CudaGraphFacts f;
  f.cuda_device = true;
  return f;
}

TEST(CudaGraphPolicy, AStepWithoutBlockersIsCapturable) { EXPECT_EQ(cuda_graph_blocker(capturable()), ""); }

TEST(CudaGraphPolicy, EachBlockerIsNamed) {
  struct Case {
    CudaGraphFacts facts;
    std::string names;
  };
  std::vector<Case> cases;
  CudaGraphFacts f = capturable();
  f.cuda_device = false;
  cases.push_back({f, "the CPU"});
  f = capturable();
  f.gpu_resident_data = false;
  cases.push_back({f, "staged loader"});
  f = capturable();
  f.gloo = true;
  cases.push_back({f, "gloo"});
  f = capturable();
  f.sync_bn = true;
  cases.push_back({f, "--sync-bn"});
  f = capturable();
  f.accumulate = 4;
  cases.push_back({f, "--accumulate 4"});
  f = capturable();
  f.ema_every = 5;
  cases.push_back({f, "--ema-every 5"});
  f = capturable();
  f.param_groups_change = true;
  cases.push_back({f, "--param-group with epochs=N"});
  for (const Case& c : cases) {
    const std::string reason = cuda_graph_blocker(c.facts);
    EXPECT_NE(reason.find(c.names), std::string::npos) << "expected '" << c.names << "' in: " << reason;
  }
}

TEST(CudaGraphPolicy, OnWhereImpossibleIsAnErrorNamingTheReason) {
  CudaGraphFacts f = capturable();
  f.gloo = true;
  try {
    (void)plan_cuda_graph(CudaGraphMode::On, f);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--cuda-graph on"), std::string::npos) << what;
    EXPECT_NE(what.find("gloo"), std::string::npos) << what;
  }
  const CudaGraphPlan on = plan_cuda_graph(CudaGraphMode::On, capturable());
  EXPECT_TRUE(on.capture);
  EXPECT_EQ(on.note, "");
}

TEST(CudaGraphPolicy, AutoFallsBackWithOneLineOnAGpuAndSilentlyOnTheCpu) {
  CudaGraphFacts f = capturable();
  f.accumulate = 2;
  const CudaGraphPlan gpu = plan_cuda_graph(CudaGraphMode::Auto, f);
  EXPECT_FALSE(gpu.capture);
  EXPECT_EQ(gpu.note.rfind("cnn_train: CUDA graph off (eager steps): --accumulate 2", 0), 0u) << gpu.note;
  EXPECT_EQ(gpu.note.find('\n'), std::string::npos) << "one line";
  f = capturable();
  f.cuda_device = false;
  const CudaGraphPlan cpu = plan_cuda_graph(CudaGraphMode::Auto, f);
  EXPECT_FALSE(cpu.capture);
  EXPECT_EQ(cpu.note, "") << "a CPU run has no graphs to miss";
  EXPECT_TRUE(plan_cuda_graph(CudaGraphMode::Auto, capturable()).capture);
}

TEST(CudaGraphPolicy, OffIsEagerWithoutANote) {
  const CudaGraphPlan off = plan_cuda_graph(CudaGraphMode::Off, capturable());
  EXPECT_FALSE(off.capture);
  EXPECT_EQ(off.note, "");
  CudaGraphFacts f = capturable();
  f.gloo = true;
  EXPECT_NO_THROW((void)plan_cuda_graph(CudaGraphMode::Off, f)) << "off never refuses";
}

TEST(CudaGraphFlag, ParsesAutoOnOffAndRefusesOthers) {
  auto parse = [](std::vector<std::string> reversed) {
    TrainConfig c;
    CLI::App app;
    add_train_flags(app, c);
    app.parse(reversed);
    return c.cuda_graph;
  };
  EXPECT_EQ(parse({"mnist", "--dataset"}), CudaGraphMode::Auto) << "the default";
  EXPECT_EQ(parse({"on", "--cuda-graph", "mnist", "--dataset"}), CudaGraphMode::On);
  EXPECT_EQ(parse({"off", "--cuda-graph", "mnist", "--dataset"}), CudaGraphMode::Off);
  EXPECT_EQ(parse({"auto", "--cuda-graph", "mnist", "--dataset"}), CudaGraphMode::Auto);
  EXPECT_THROW(parse({"maybe", "--cuda-graph", "mnist", "--dataset"}), CLI::ParseError);
  EXPECT_THROW(parse({"--cuda-graph", "mnist", "--dataset"}), CLI::ParseError);
}

// A dataset of n 1x2x2 images, label i % 2.
data::Dataset tiny_dataset(std::int64_t n) {
  data::Dataset d;
  d.channels = 1;
  d.height = 2;
  d.width = 2;
  d.class_names = {"a", "b"};
  for (std::int64_t i = 0; i < n; ++i) {
    for (int p = 0; p < 4; ++p) d.images.push_back(static_cast<std::uint8_t>(i + p));
    d.labels.push_back(static_cast<std::int32_t>(i % 2));
  }
  return d;
}

// The samples one epoch trains on with the training loader the Trainer builds for `plan`.
std::int64_t epoch_samples(const CudaGraphPlan& plan, std::int64_t n, std::int64_t batch, int world, int rank,
                           std::int64_t* batches) {
  const data::Dataset d = tiny_dataset(n);
  data::LoaderOptions o;
  o.batch_size = batch;
  o.drop_last = train_drop_last(plan);
  data::Loader loader(d, data::DistributedSampler(n, world, rank, true, 7), o);
  loader.start_epoch(0);
  std::int64_t samples = 0;
  *batches = 0;
  for (data::Batch b; loader.next(b);) {
    EXPECT_TRUE(!o.drop_last || b.size() == batch) << "a graph step got a partial batch of " << b.size();
    samples += b.size();
    ++*batches;
  }
  EXPECT_EQ(*batches, loader.num_batches());
  return samples;
}

TEST(CudaGraphPartialBatch, GraphsDropTheEpochsLastPartialBatchEagerKeepsIt) {
  const CudaGraphPlan graphs{.capture = true, .note = ""};
  const CudaGraphPlan eager{};
  EXPECT_TRUE(train_drop_last(graphs));
  EXPECT_FALSE(train_drop_last(eager));
  std::int64_t batches = 0;
  // 10 samples in batches of 4: graphs train 2 full batches (8 samples), eager 3 (the last of 2).
  EXPECT_EQ(epoch_samples(graphs, 10, 4, 1, 0, &batches), 8);
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(epoch_samples(eager, 10, 4, 1, 0, &batches), 10);
  EXPECT_EQ(batches, 3);
  // Divisible: nothing to drop.
  EXPECT_EQ(epoch_samples(graphs, 12, 4, 1, 0, &batches), 12);
  EXPECT_EQ(batches, 3);
  // Two ranks: 11 samples pad to 12, 6 each; batches of 4: one full batch per rank with graphs.
  EXPECT_EQ(epoch_samples(graphs, 11, 4, 2, 1, &batches), 4);
  EXPECT_EQ(batches, 1);
  EXPECT_EQ(epoch_samples(eager, 11, 4, 2, 1, &batches), 6);
  EXPECT_EQ(batches, 2);
}

TEST(CudaGraphDeviceState, TheCpuRefusesDevicePointers) {
  ExecutionContext cpu;
  const Tensor x = Tensor::zeros({8}, DType::F32, Device::cpu());
  const Tensor y = Tensor::zeros({8}, DType::F32, Device::cpu());
  const std::uint64_t base = 3;
  EXPECT_DATA_ERROR(ops::dropout_forward(cpu, 0.5, 1, 0, x, y, &base), "device offset base", "cpu");
  EXPECT_DATA_ERROR(ops::dropout_backward(cpu, 0.5, 1, 0, x, y, &base), "device offset base", "cpu");
  const Tensor logits = Tensor::zeros({2, 3}, DType::F32, Device::cpu());
  Tensor labels = Tensor::zeros({2}, DType::I32, Device::cpu());
  const Tensor loss = Tensor::zeros({1}, DType::F32, Device::cpu());
  float losses[4] = {};
  const std::int64_t slot = 1;
  EXPECT_DATA_ERROR(ops::softmax_cross_entropy_forward(cpu, logits, labels, 0.0, loss, Tensor(), nullptr,
                                                       nullptr, losses, &slot, 4),
                    "device loss slot", "cpu");
  const data::Dataset d = tiny_dataset(8);
  data::LoaderOptions o;
  const std::uint64_t epoch = 0;
  const std::int64_t offset = 0;
  o.device_epoch = &epoch;
  o.device_batch_offset = &offset;
  EXPECT_DATA_ERROR(data::Loader(d, data::DistributedSampler(8, 1, 0, true, 1), o), "gpu_resident");
}

TEST(CudaGraphProgram, OnOnTheCpuExitsTwoNamingTheReason) {
  const data::testing::TempDir dir;
  const std::string root = testing::tiny_folder_dataset("cuda_graph_on_cpu", 2);
  const testing::RunResult r = testing::run_train(testing::with_args(
      testing::tiny_folder_args(root, dir / "ckpt", "cnn3", 2, 1), {"--cpu", "--cuda-graph", "on"}));
  std::filesystem::remove_all(root);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--cuda-graph on"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the model trains on the CPU"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine::apps
