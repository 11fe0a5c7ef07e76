// ddp_overlap: shows whether DDP's bucket all-reduces overlap backward. Each rank trains a zoo model on
// random CIFAR-shaped data with the dist::Reducer's timeline on (dist/reducer.h); after the warm-up steps,
// rank 0 prints its timeline of one step: per bucket, in launch order, its size, when its last gradient
// arrived (ready), when its all-reduce was queued, started and ended, and when backward ended
// (Reducer::finish), in ms from the step start (before forward); then one summary line:
//
//   all-reduce of bucket 0 started at X ms, backward ended at Y ms: N of M buckets started before backward
//   ended (overlap Z ms)
//
// where Z is the communication time spent before backward ended (the buckets run one after another).
//
//   ddp_overlap [--nproc 2] [--cpu] [--model resnet18|vgg6|cnn3] [--batch-size B] [--bucket-mb MB] [--steps
//   N] ddp_overlap --smoke          CPU, 2 ranks, cnn3 at batch 4, 3 steps (ctest label cpu); exit 1 unless
//   at
//                                least one bucket's all-reduce started before backward ended
//
// Started outside a launcher, it re-executes itself once per rank (dist::launch_workers, as cnn_train does);
// under torchrun/mpirun/srun each process is a rank. Ranks run on GPU r through NCCL when a GPU is visible
// and
// --cpu is not given (`--nproc 1` on a GPU still runs every all-reduce on the Reducer's communication
// stream), else on the CPU through gloo, with OMP_NUM_THREADS = cores / ranks unless it is set.
// Timestamps: CUDA events on the compute and communication streams, or the host clock with gloo's
// communication thread. The timed step starts after a barrier, so every rank begins it together.
//
// Exit codes: 0 done; 2 bad flags or setup (the message names the flag); 1 a failure while running, or (with
// --smoke) no overlap.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apps/train/train_device.h"
#include "core/device.h"
#include "core/error.h"
#include "core/philox.h"
#include "dist/bootstrap.h"
#include "dist/launcher.h"
#include "dist/reducer.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"

namespace {

using namespace engine;

struct Config {
  int nproc = 2;
  bool cpu = false;
  std::string model = "resnet18";
  std::int64_t batch = 32;
  double bucket_mb = 25.0;
  int steps = 4;
  double timeout_s = 300.0;
  bool smoke = false;
};

bool gpu_ranks(const Config& c) { return !c.cpu && device_count() > 0; }

// Starts one rank per process with this program's arguments and waits for them.
int launch(int argc, char** argv, const Config& c) {
  dist::LaunchOptions options;
  if (gpu_ranks(c)) {
    ENGINE_CHECK(c.nproc <= device_count(), "--nproc {}: rank r runs on GPU r, but {} GPU(s) are visible",
                 c.nproc, device_count());
    for (int r = 0; r < c.nproc; ++r) options.gpus.push_back(r);
  } else {
    options.nproc = c.nproc;
    if (std::getenv("OMP_NUM_THREADS") == nullptr) {  // the ranks share the cores
      const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      options.extra_env.emplace_back("OMP_NUM_THREADS", std::to_string(std::max(1, cores / c.nproc)));
    }
  }
  const dist::LaunchResult result =
      dist::launch_workers(std::vector<std::string>(argv, argv + argc), options);
  if (result.exit_code != 0) fmt::print(stderr, "ddp_overlap: {}\n", result.message);
  return result.exit_code;
}

// Uniform in [-1, 1), the same on every rank (the timing does not depend on the values).
Tensor random_images(std::int64_t n) {
  Tensor t = Tensor::empty({n, 3, 32, 32}, DType::F32);
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i)
    p[i] = 2.0f * philox_uniform(11, 0, static_cast<std::uint64_t>(i)) - 1.0f;
  return t;
}

Tensor random_labels(std::int64_t n) {
  Tensor t = Tensor::empty({n}, DType::I32);
  for (std::int64_t i = 0; i < n; ++i)
    t.data<std::int32_t>()[i] =
        static_cast<std::int32_t>(philox_word(11, 1, static_cast<std::uint64_t>(i)) % 10);
  return t;
}

struct Summary {
  std::size_t started_before = 0;  // buckets whose all-reduce started before backward ended
  double overlap_ms = 0;           // communication time before backward ended
};

Summary summarize(const dist::StepTimeline& t) {
  Summary s;
  for (const dist::BucketTiming& b : t.buckets) {
    if (b.start_ms >= t.backward_end_ms) continue;
    ++s.started_before;
    s.overlap_ms += std::min(b.end_ms, t.backward_end_ms) - b.start_ms;
  }
  return s;
}

void print_timeline(const dist::StepTimeline& t) {
  fmt::print("{:>6} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "bucket", "MB", "ready", "queued", "start", "end");
  for (const dist::BucketTiming& b : t.buckets) {
    fmt::print("{:>6} {:>9.3f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f}\n", b.bucket,
               static_cast<double>(b.bytes) / (1024.0 * 1024.0), b.ready_ms, b.queued_ms, b.start_ms,
               b.end_ms);
  }
  fmt::print("backward ended (Reducer::finish) at {:.2f} ms\n", t.backward_end_ms);
  const Summary s = summarize(t);
  fmt::print(
      "all-reduce of bucket 0 started at {:.2f} ms, backward ended at {:.2f} ms: {} of {} buckets started "
      "before backward ended (overlap {:.2f} ms)\n",
      t.buckets.front().start_ms, t.backward_end_ms, s.started_before, t.buckets.size(), s.overlap_ms);
}

// One rank: the model on its device, the warm-up steps, the timed step; rank 0 prints. Returns the exit code.
int run_rank(const Config& c, const dist::DistEnv& env) {
  const bool gpu = gpu_ranks(c);
  const int device_index = gpu ? dist::rank_cuda_device(env) : 0;
  apps::TrainDevice device(!gpu, device_index, /*deterministic=*/false, apps::Precision::Tf32,
                           /*dropout_seed=*/1 + env.rank);  // cnn_train's default math
  const dist::Backend backend = gpu ? dist::Backend::Nccl : dist::Backend::Gloo;
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(c.timeout_s * 1000.0));
  const std::unique_ptr<dist::ProcessGroup> pg =
      dist::init_process_group(env, backend, timeout, gpu ? device_index : -1);

  layers::Model model = layers::build_model(c.model, 3, 10, 32, 32);
  model.finalize(device.context(), /*init_seed=*/7);
  dist::ReducerOptions ro;
  ro.bucket_mb = c.bucket_mb;
  ro.first_bucket_mb = std::min(1.0, c.bucket_mb);  // as cnn_train
  ro.record_timeline = true;
  dist::Reducer reducer(*pg, model, ro);

  const layers::ExecutionContext& ctx = model.context();
  const Tensor images = random_images(c.batch).to(ctx.device, ctx.stream);
  const Tensor labels = random_labels(c.batch).to(ctx.device, ctx.stream);
  layers::SoftmaxCrossEntropy loss;
  if (pg->rank() == 0) {
    const char* blas = std::getenv("OMP_NUM_THREADS");
    fmt::print(
        "ddp_overlap{}: {}, batch {} per rank, {} {} rank(s) through {}{}; {} buckets (first {} MB, then up "
        "to {} MB); {} warm-up step(s), then rank 0's timeline of one step in ms from its start (before "
        "forward)\n",
        c.smoke ? " --smoke" : "", c.model, c.batch, pg->world_size(),
        gpu ? "GPU" : (c.cpu ? "CPU" : "CPU (no GPU visible)"), pg->backend(),
        !gpu && blas != nullptr ? fmt::format(" (OMP_NUM_THREADS={})", blas) : "", reducer.buckets().size(),
        ro.first_bucket_mb, ro.bucket_mb, c.steps - 1);
    std::fflush(stdout);
  }
  for (int step = 0; step < c.steps; ++step) {
    if (step == c.steps - 1) {  // the timed step: nothing left queued, every rank starts it together
      device.synchronize();
      pg->barrier();
    }
    reducer.mark_step_start();
    loss.forward(ctx, model.forward(images, layers::Mode::Train), labels);
    model.backward(loss.backward());
    reducer.finish();
  }
  device.synchronize();
  const dist::StepTimeline& timeline = reducer.timeline();
  ENGINE_CHECK(!timeline.buckets.empty(), "ddp_overlap: the Reducer recorded no timeline");
  if (pg->rank() != 0) return 0;
  print_timeline(timeline);
  std::fflush(stdout);
  if (c.smoke && summarize(timeline).started_before == 0) {
    fmt::print(stderr,
               "ddp_overlap --smoke: FAILED: no bucket's all-reduce started before backward ended (bucket 0 "
               "started at {:.2f} ms, backward ended at {:.2f} ms)\n",
               timeline.buckets.front().start_ms, timeline.backward_end_ms);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{
      "ddp_overlap: the timeline of one DDP step (do bucket all-reduces start before backward ends?)"};
  app.add_option("--nproc", c.nproc, "ranks on this machine (rank r on GPU r, or CPU ranks with --cpu)")
      ->check(CLI::Range(1, 64));
  app.add_flag("--cpu", c.cpu, "CPU ranks through gloo even where a GPU is visible");
  app.add_option("--model", c.model, "zoo model")->check(CLI::IsMember({"resnet18", "vgg6", "cnn3"}));
  app.add_option("--batch-size", c.batch, "samples per rank and step")->check(CLI::Range(1, 1 << 16));
  app.add_option("--bucket-mb", c.bucket_mb, "bucket size in MB (the first bucket is 1 MB, as cnn_train's)")
      ->check(CLI::Range(0.001, 1e6));
  app.add_option("--steps", c.steps, "steps in all: the last is timed, the others warm up")
      ->check(CLI::Range(1, 1000));
  app.add_option("--timeout", c.timeout_s, "seconds a collective may wait for the other ranks")
      ->check(CLI::Range(1.0, 1e6));
  app.add_flag("--smoke", c.smoke,
               "CI: CPU, 2 ranks, cnn3 at batch 4, 3 steps; exit 1 unless an all-reduce started before "
               "backward ended");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (c.smoke) {
    c.cpu = true;
    c.nproc = 2;
    c.model = "cnn3";
    c.batch = 4;
    c.bucket_mb = 25.0;
    c.steps = 3;
    c.timeout_s = 60.0;
  }

  dist::DistEnv env;
  try {
    env = dist::read_dist_env();
    if (!env.distributed()) return launch(argc, argv, c);
  } catch (const std::exception& e) {
    fmt::print(stderr, "ddp_overlap: {}\n", e.what());
    return 2;
  }
  try {
    return run_rank(c, env);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "ddp_overlap: rank {}: {}\n", env.rank, e.what());
    return 1;
  }
}
