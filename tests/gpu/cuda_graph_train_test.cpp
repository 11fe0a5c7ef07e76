// The whole training step as one CUDA graph (apps/train/training_graph.h, issue 17 item 4), on a real device:
//  - a cnn_train-like loop (the GPU-resident loader with crop-flip augmentation, vgg6 with Dropout and
//    BatchNorm, the loss, SGD with momentum and a rate that changes every step), one eager warm-up step, then
//    the captured step replayed, equals a plain eager loop bit for bit in deterministic mode: weights,
//    momentum, each step's loss, the dropout offset, BatchNorm's counters, the step count; an inference
//    forward between the epochs (eager work beside the graph's memory pool) changes nothing;
//  - cnn_train --cuda-graph on equals --cuda-graph off bit for bit (checkpoints), also across a --resume and
//    a stop signal between replays (a mid-epoch checkpoint, then --resume auto);
//  - gloo falls back with its reason (auto) or is refused (on); two NCCL ranks on two GPUs replay their
//    all-reduces inside the graph and equal eager DDP.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/train/step_state.h"
#include "apps/train/training_graph.h"
#include "core/cuda_check.h"
#include "core/error.h"
#include "core/stream.h"
#include "data/loader.h"
#include "kernels/cuda/handles.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "optim/safetensors.h"
#include "optim/sgd.h"
#include "tests/common/gpu.h"
#include "tests/cpu/cnn_train_restart_test_util.h"
#include "tests/cpu/cnn_train_test_util.h"
#include "tests/cpu/tiny_cifar_dataset.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

constexpr std::int64_t kBatch = 16;

// 70 random 3x32x32 images of 10 classes: 4 full batches of 16 an epoch, 6 samples dropped (drop_last).
data::Dataset random_dataset() {
  data::Dataset d;
  d.channels = 3;
  d.height = 32;
  d.width = 32;
  for (int c = 0; c < 10; ++c) d.class_names.push_back(std::string{'c', static_cast<char>('0' + c)});
  std::mt19937 gen(123);
  std::uniform_int_distribution<int> byte(0, 255);
  const std::int64_t n = 70;
  d.images.resize(static_cast<std::size_t>(n * d.image_bytes()));
  for (std::uint8_t& v : d.images) v = static_cast<std::uint8_t>(byte(gen));
  for (std::int64_t i = 0; i < n; ++i) d.labels.push_back(static_cast<std::int32_t>(i % 10));
  return d;
}

// One training process: its stream, deterministic handles, vgg6 (Dropout 0.5 in the classifier, BatchNorm),
// SGD, the GPU-resident loader with crop-flip, an array of the epoch's step losses; with `graphs`, the
// TrainingGraph whose step state every step reads (as apps/train/trainer.cpp wires it).
struct TrainRun {
  Stream stream{0};
  cuda::CudaHandles handles{0, stream.get(), cuda::training_handles_options(/*deterministic=*/true, false)};
  layers::Model model = layers::build_model("vgg6", 3, 10, 32, 32);
  layers::SoftmaxCrossEntropy loss;
  std::unique_ptr<optim::Sgd> sgd;
  std::unique_ptr<data::Loader> loader;
  Tensor step_losses;   // [batches] float
  Tensor accumulators;  // double loss_sum, int64 correct
  apps::StepDeviceRefs refs;
  std::unique_ptr<apps::TrainingGraph> graph;  // last: destroyed first

  TrainRun(const data::Dataset& d, bool graphs) {
    layers::ExecutionContext ctx;
    ctx.device = Device::cuda(0);
    ctx.stream = stream.get();
    ctx.handles = &handles;
    model.finalize(ctx, /*init_seed=*/5);
    model.context().dropout_seed = 99;
    sgd = std::make_unique<optim::Sgd>(model, optim::SgdConfig{.momentum = 0.9, .weight_decay = 5e-4});
    data::LoaderOptions o;
    o.batch_size = kBatch;
    o.drop_last = true;
    o.device = Device::cuda(0);
    o.gpu_resident = true;
    o.stream = stream.get();
    o.transform = data::TransformConfig::train({0.5f, 0.4f, 0.3f}, {0.25f, 0.2f, 0.3f}, /*seed=*/7);
    if (graphs) {
      graph = std::make_unique<apps::TrainingGraph>(model, *sgd);
      refs = graph->device_refs();
      sgd->set_device_lr(refs.lr);
      model.context().dropout_offset_device = refs.dropout_offset;
      o.device_epoch = refs.augment_epoch;
      o.device_batch_offset = refs.batch_offset;
    }
    loader = std::make_unique<data::Loader>(d, data::DistributedSampler(d.size(), 1, 0, true, 7), o);
    step_losses = Tensor::zeros({loader->num_batches()}, DType::F32, Device::cuda(0), stream.get());
    accumulators = Tensor::zeros({16}, DType::U8, Device::cuda(0), stream.get());
  }

  layers::LossAccumulators acc() {
    layers::LossAccumulators a{reinterpret_cast<double*>(accumulators.data<std::uint8_t>()),
                               reinterpret_cast<std::int64_t*>(accumulators.data<std::uint8_t>() + 8)};
    if (graph) {
      a.step_losses = step_losses.data<float>();
      a.loss_slot = refs.loss_slot;
      a.slots = step_losses.numel();
    }
    return a;
  }

  // Forward, loss, backward, SGD of the loader's next batch; the loss of an eager run is copied to its slot.
  void step(std::int64_t slot, double lr) {
    data::Batch b;
    ENGINE_CHECK(loader->next(b), "the loader ran out");
    const Tensor logits = model.forward(b.images, layers::Mode::Train);
    const Tensor l = loss.forward(model.context(), logits, b.labels, acc());
    if (!graph) step_losses.flat_range(slot, {1}).copy_from(l, stream.get());
    model.backward(loss.backward());
    sgd->step(lr);
  }

  std::vector<std::int64_t> counters() const {
    std::vector<std::int64_t> out;
    for (const layers::Counter& c : model.counters()) out.push_back(*c.value);
    return out;
  }
};

TEST(CudaGraphTraining, ReplayedStepsEqualEagerStepsBitwiseAcrossEpochs) {
  SKIP_WITHOUT_GPU();
  const data::Dataset d = random_dataset();
  TrainRun eager(d, false), graphed(d, true);
  const std::int64_t batches = eager.loader->num_batches();
  ASSERT_EQ(batches, 4);
  const std::vector<float> probe_pixels = nonzero_floats(8 * 3 * 32 * 32, 31, -1.0f, 1.0f);
  std::int64_t step = 0;
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    eager.loader->start_epoch(epoch);
    graphed.loader->start_epoch(epoch);
    for (std::int64_t k = 0; k < batches; ++k, ++step) {
      const double lr = 0.05 / static_cast<double>(1 + step);  // a new rate every step
      eager.step(k, lr);
      apps::StepPosition p;
      p.epoch = epoch;
      p.loader_batch = k;
      p.batch_size = kBatch;
      p.optimizer_steps = graphed.sgd->steps();
      p.dropout_offset = graphed.model.context().dropout_offset;
      p.lr = lr;
      graphed.graph->publish(apps::make_step_state(p));
      if (graphed.graph->captured()) {
        graphed.graph->replay();
      } else if (step >= 1) {  // kCudaGraphWarmupSteps eager steps first
        const std::string failed = graphed.graph->capture([&] { graphed.step(k, lr); });
        ASSERT_EQ(failed, "");
        graphed.graph->launch_captured();
        EXPECT_EQ(graphed.graph->dropout_forwards(), 1u) << "vgg6 has one Dropout";
        std::printf("vgg6 batch %lld: %zu kernels per replayed step\n", static_cast<long long>(kBatch),
                    graphed.graph->kernel_nodes());
        EXPECT_GT(graphed.graph->kernel_nodes(), 30u);
      } else {
        graphed.step(k, lr);
      }
      ASSERT_EQ(graphed.model.context().dropout_offset, eager.model.context().dropout_offset)
          << "step " << step;
      ASSERT_EQ(graphed.sgd->steps(), eager.sgd->steps()) << "step " << step;
      ASSERT_EQ(graphed.counters(), eager.counters()) << "step " << step;
    }
    const cudaStream_t es = eager.stream.get(), gs = graphed.stream.get();
    EXPECT_TRUE(bitwise_equal(to_host<float>(graphed.model.flat_parameters(), gs),
                              to_host<float>(eager.model.flat_parameters(), es)))
        << "weights after epoch " << epoch + 1;
    EXPECT_TRUE(bitwise_equal(to_host<float>(graphed.sgd->momentum_buffer(), gs),
                              to_host<float>(eager.sgd->momentum_buffer(), es)))
        << "momentum after epoch " << epoch + 1;
    EXPECT_TRUE(bitwise_equal(to_host<float>(graphed.model.flat_buffers(), gs),
                              to_host<float>(eager.model.flat_buffers(), es)))
        << "BatchNorm running statistics after epoch " << epoch + 1;
    EXPECT_TRUE(bitwise_equal(to_host<float>(graphed.step_losses, gs), to_host<float>(eager.step_losses, es)))
        << "step losses of epoch " << epoch + 1;
    EXPECT_TRUE(bitwise_equal(to_host<std::uint8_t>(graphed.accumulators, gs),
                              to_host<std::uint8_t>(eager.accumulators, es)))
        << "loss sum and correct count";
    // Eager work between epochs (an evaluation's forward) allocates beside the graph's pool; the next
    // epoch's replays must not find their memory reused.
    const Tensor ge =
        graphed.model.forward(to_device(probe_pixels, gs).view({8, 3, 32, 32}), layers::Mode::Inference);
    const Tensor ee =
        eager.model.forward(to_device(probe_pixels, es).view({8, 3, 32, 32}), layers::Mode::Inference);
    EXPECT_TRUE(bitwise_equal(to_host<float>(ge, gs), to_host<float>(ee, es))) << "inference logits";
  }
  EXPECT_EQ(eager.model.context().dropout_offset, static_cast<std::uint64_t>(step));
}

// A capture the step breaks (a host synchronization inside) fails with a reason and leaves the host state at
// the step's start; the Trainer's fallback (restart the epoch's count, run the step eagerly) then trains on
// exactly as eager steps do.
TEST(CudaGraphTraining, AFailedCaptureRestoresTheHostStateAndTheStepRunsEagerly) {
  SKIP_WITHOUT_GPU();
  const data::Dataset d = random_dataset();
  TrainRun eager(d, false), graphed(d, true);
  eager.loader->start_epoch(0);
  graphed.loader->start_epoch(0);
  auto publish = [&](std::int64_t k, double lr) {
    apps::StepPosition p;
    p.loader_batch = k;
    p.batch_size = kBatch;
    p.optimizer_steps = graphed.sgd->steps();
    p.dropout_offset = graphed.model.context().dropout_offset;
    p.lr = lr;
    graphed.graph->publish(apps::make_step_state(p));
  };
  eager.step(0, 0.05);
  publish(0, 0.05);
  graphed.step(0, 0.05);
  publish(1, 0.04);
  const std::uint64_t offset_before = graphed.model.context().dropout_offset;
  const std::int64_t steps_before = graphed.sgd->steps();
  const std::vector<std::int64_t> counters_before = graphed.counters();
  const std::string failed = graphed.graph->capture([&] {
    graphed.step(1, 0.04);
    CUDA_CHECK(cudaStreamSynchronize(graphed.stream.get()));  // not allowed while capturing
  });
  EXPECT_NE(failed, "");
  EXPECT_FALSE(graphed.graph->captured());
  EXPECT_EQ(graphed.model.context().dropout_offset, offset_before);
  EXPECT_EQ(graphed.sgd->steps(), steps_before);
  EXPECT_EQ(graphed.counters(), counters_before);
  graphed.loader->start_epoch(0);  // as Trainer::capture_step: the count restarts, the state says which batch
  graphed.step(1, 0.04);
  eager.step(1, 0.04);
  EXPECT_TRUE(bitwise_equal(to_host<float>(graphed.model.flat_parameters(), graphed.stream.get()),
                            to_host<float>(eager.model.flat_parameters(), eager.stream.get())));
  EXPECT_TRUE(bitwise_equal(to_host<float>(graphed.step_losses, graphed.stream.get()),
                            to_host<float>(eager.step_losses, eager.stream.get())));
}

// The program: --cuda-graph on equals off bit for bit (cnn3 has a Dropout and BatchNorm; crop-flip; 48
// training images in batches of 8: no partial batch, so both modes see the same samples), and a run resumed
// after its first epoch (a new warm-up step and capture) equals the uninterrupted one. The programs' tests
// here train on the toy in CIFAR-10's format: read into memory, it gets the GPU-resident loader that graphs
// need (a folder: dataset is read from disk by the staged loader, and --cuda-graph on refuses it).
TEST(CudaGraphProgram, OnEqualsOffBitwiseAndAcrossAResume) {
  SKIP_WITHOUT_GPU();
  using apps::testing::checkpoint_differences;
  using apps::testing::run_train;
  using apps::testing::with_args;
  const std::string root = apps::testing::tiny_cifar_dataset("cuda_graph_on_off");
  const std::string off = apps::testing::temp_dir("cuda_graph_off"),
                    on = apps::testing::temp_dir("cuda_graph_on"),
                    resumed = apps::testing::temp_dir("cuda_graph_resumed");
  // A rate that changes every step (a per-step warmup over both epochs; unlike cosine, its values do not
  // depend on --epochs, so the 1-epoch run and its resumption follow the 2-epoch plan).
  const std::vector<std::string> extra = {"--augment", "crop-flip",       "--warmup-epochs",
                                          "2",         "--schedule-unit", "step"};
  auto args = [&](const std::string& dir, int epochs, const std::string& mode) {
    return with_args(apps::testing::tiny_cifar_args(root, dir, "cnn3", 8, epochs),
                     with_args(extra, {"--cuda-graph", mode}));
  };
  const apps::testing::RunResult r_off = run_train(args(off, 2, "off"));
  ASSERT_EQ(r_off.exit_code, 0) << r_off.output;
  EXPECT_EQ(r_off.output.find("CUDA graph"), std::string::npos) << r_off.output;
  const apps::testing::RunResult r_on = run_train(args(on, 2, "on"));
  ASSERT_EQ(r_on.exit_code, 0) << r_on.output;
  EXPECT_NE(r_on.output.find("CUDA graph: the training step is captured after 1 eager step(s)"),
            std::string::npos)
      << r_on.output;
  const apps::testing::RunResult first = run_train(args(resumed, 1, "on"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const apps::testing::RunResult second =
      run_train(with_args(args(resumed, 2, "on"), {"--resume", resumed + "/epoch1.safetensors"}));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  for (const std::string& other : {on, resumed}) {
    for (const apps::testing::TensorDifference& diff :
         checkpoint_differences(off + "/epoch2.safetensors", other + "/epoch2.safetensors")) {
      EXPECT_EQ(diff.worst, 0.0) << other << ": " << diff.name << " differs by " << diff.worst;
    }
    const auto a = optim::SafetensorsFile::read(off + "/epoch2.safetensors").metadata();
    const auto b = optim::SafetensorsFile::read(other + "/epoch2.safetensors").metadata();
    for (const char* key : {"step", "dropout_offset", "epoch"}) EXPECT_EQ(a.at(key), b.at(key)) << key;
  }
  std::filesystem::remove_all(root);
}

// A stop signal between replays: the ranks' stop check, the mid-epoch checkpoint (weights, momentum, the
// dropout offset and counters the host advanced for the replays) and --resume auto, which captures again
// after its warm-up step, continue bit for bit (the CPU test CnnTrainRestart.SigtermMidEpoch..., with
// graphs). The dataset's folder has a name of its own: scratch folders are named by name and process, and
// temp_dir("cuda_graph_sigterm") below empties the folder it hands out.
TEST(CudaGraphProgram, SigtermBetweenReplaysLeavesACheckpointThatResumesBitForBit) {
  SKIP_WITHOUT_GPU();
  using apps::testing::with_args;
  const std::string root = apps::testing::tiny_cifar_dataset("cuda_graph_sigterm_data", 400);
  const std::string straight = apps::testing::temp_dir("cuda_graph_sigterm_straight"),
                    dir = apps::testing::temp_dir("cuda_graph_sigterm");
  auto args = [&](const std::string& out) {
    return with_args(apps::testing::tiny_cifar_args(root, out, "cnn3", 4, 3),
                     {"--cuda-graph", "on", "--resume", "auto", "--save-every-steps", "20"});
  };
  const apps::testing::RunResult reference = apps::testing::run_train(args(straight));
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  apps::testing::LiveProcess run(with_args({apps::testing::program_path("cnn_train")}, args(dir)));
  ASSERT_TRUE(run.wait_for("saved " + dir + "/step20.safetensors", 120)) << run.output();
  run.signal(SIGTERM);
  EXPECT_EQ(run.finish(120), 128 + SIGTERM) << run.output();
  EXPECT_NE(run.output().find("stopped by SIGTERM"), std::string::npos) << run.output();
  const apps::testing::RunResult resumed = apps::testing::run_train(args(dir));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from "), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("CUDA graph: the training step is captured"), std::string::npos)
      << resumed.output;
  for (const apps::testing::TensorDifference& diff :
       apps::testing::checkpoint_differences(straight + "/epoch3.safetensors", dir + "/epoch3.safetensors")) {
    EXPECT_EQ(diff.worst, 0.0) << diff.name << " differs by " << diff.worst;
  }
  std::filesystem::remove_all(root);
}

// Gloo's reason, not the loader's: the dataset is in memory (the GPU-resident loader), so gloo is what keeps
// the step eager.
TEST(CudaGraphProgram, GlooFallsBackOnAutoAndIsRefusedOnOn) {
  SKIP_WITHOUT_GPU();
  const std::string root = apps::testing::tiny_cifar_dataset("cuda_graph_gloo");
  const std::string dir = apps::testing::temp_dir("cuda_graph_gloo_out");
  const std::vector<std::string> ddp = {"--gpus", "0,0", "--backend", "gloo", "--limit-train", "16"};
  const apps::testing::RunResult automatic = apps::testing::run_train(
      apps::testing::with_args(apps::testing::tiny_cifar_args(root, dir, "cnn3", 8, 1), ddp));
  ASSERT_EQ(automatic.exit_code, 0) << automatic.output;
  EXPECT_GE(apps::testing::count_of(automatic.output, "CUDA graph off (eager steps): the gloo process group"),
            1u)
      << automatic.output;
  EXPECT_EQ(automatic.output.find("CUDA graph: the training step is captured"), std::string::npos)
      << automatic.output;
  const apps::testing::RunResult on = apps::testing::run_train(
      apps::testing::with_args(apps::testing::tiny_cifar_args(root, dir, "cnn3", 8, 1),
                               apps::testing::with_args(ddp, {"--cuda-graph", "on", "--overwrite"})));
  EXPECT_NE(on.exit_code, 0) << on.output;
  EXPECT_NE(on.output.find("--cuda-graph on: a training step cannot be a CUDA graph here: the gloo"),
            std::string::npos)
      << on.output;
  std::filesystem::remove_all(root);
}

// Two NCCL ranks: the reducer's bucket all-reduces run on its side stream inside the captured graph.
TEST(CudaGraphProgram, TwoNcclRanksReplayTheirAllReducesAndEqualEagerDdp) {
  SKIP_WITHOUT_GPU();
  if (device_count() < 2) GTEST_SKIP() << "needs two CUDA devices, " << device_count() << " visible";
  const std::string root = apps::testing::tiny_cifar_dataset("cuda_graph_nccl2");
  const std::string off = apps::testing::temp_dir("cuda_graph_nccl2_off"),
                    on = apps::testing::temp_dir("cuda_graph_nccl2_on");
  for (const auto& [dir, mode] : {std::pair{off, "off"}, std::pair{on, "on"}}) {
    const apps::testing::RunResult r = apps::testing::run_train(apps::testing::with_args(
        apps::testing::tiny_cifar_args(root, dir, "cnn3", 8, 2), {"--gpus", "0,1", "--cuda-graph", mode}));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  for (const apps::testing::TensorDifference& diff :
       apps::testing::checkpoint_differences(off + "/epoch2.safetensors", on + "/epoch2.safetensors")) {
    EXPECT_EQ(diff.worst, 0.0) << diff.name << " differs by " << diff.worst;
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace engine
