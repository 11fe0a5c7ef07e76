// train_bench: end-to-end training throughput of the engine, the loop a trainer runs and nothing else:
// data::Loader (GPU-resident: the uint8 dataset on the GPU, one gather+augment+normalize kernel a batch) ->
// layers::Model forward -> layers::SoftmaxCrossEntropy -> Model backward -> one fused SGD step over the flat
// parameter buffer (kernels/cuda/sgd.h). One process, so the all-reduce phase is 0 (no DDP in this program).
//
// For each model and batch: `--warmup` steps (cuDNN plans, the allocator's cache, the loader's first epoch
// start), then `--steps` timed steps (or a whole epoch with --epoch), timed with CUDA events and the host
// clock around the synchronized run (apps/train/run_clock.h's RunClock, which times cnn_train's epochs).
// Reported: images/s, time per epoch (50,000 images: measured with --epoch, else steps-per-epoch x the
// measured step time), peak device memory (the caching allocator's peak, which includes the 150 MB resident
// dataset), the per-phase median from events (step_timer.h), the achieved model TFLOP/s (forward + backward
// FLOPs per image from benchmarks/common/layer_costs.h), the host time per step (the median time the issuing
// thread takes to queue one step, no synchronization inside: what bounds the step once the GPU is faster than
// the host), and on a GPU the kernels per step (one step captured into a CUDA graph after the timed run,
// never launched: its kernel nodes, core/cuda_graph.h; "n/a" with the reason when the step cannot be
// captured).
//
// --cuda-graph: cnn_train's graph mode (apps/train/training_graph.h): every step reads its epoch, batch
// offset and dropout offset from the device step state (apps/train/step_state_buffer.h); after the warm-up
// one step is captured into a CUDA graph and the timed steps are replays of it, each after the host publishes
// its state. The per-phase split is then not separable: one replay is reported as a whole.
//
// Data: CIFAR-10 from CIFAR10_DIR (data/cifar10.h) when it loads, else random CIFAR-shaped images (the
// throughput does not depend on the pixels). The recipe: random crop 32 pad 4, flip, normalize; SGD lr 0.05,
// momentum 0.9, weight decay 5e-4, label smoothing 0; constant lr (a schedule changes no step's cost).
//
//   train_bench                                   vgg6 and resnet18 at batch 128 and 512 on GPU 0
//   train_bench --models resnet18 --batches 128   one case
//   train_bench --json out.jsonl                  also one JSON object per case, one per line
//   train_bench --cuda-graph                      the timed steps replay one captured step
//   train_bench --costs [--costs-batch 128]       per-layer FLOPs and bytes of every zoo model, then exit
//   train_bench --smoke                           CPU: mnist_cnn, batch 4, 2 steps (ctest label cpu)
//   train_bench --cpu --models mnist_cnn,cnn3 --batches 64
//                                                 the CPU device (float32, kernels/cpu_fast); threads from
//                                                 OMP_NUM_THREADS; mnist_cnn on random 1x28x28 images, the
//                                                 others on CIFAR-10 or random 3x32x32 ones

//
// The pieces: train_case.h (the settings and one case's run), train_report.h (its output), step_timer.h.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/cli/choice_option.h"
#include "apps/train/cpu_conv_algo_flag.h"
#include "apps/train/layout_flag.h"
#include "apps/train/precision.h"
#include "benchmarks/common/layer_costs.h"
#include "benchmarks/common/random_dataset.h"
#include "benchmarks/train/train_case.h"
#include "benchmarks/train/train_report.h"
#include "core/allocator.h"
#include "core/device.h"
#include "core/error.h"
#include "kernels/cpu_fast/host_probe.h"
#include "kernels/cpu_fast/omp_wait.h"
#include "layers/models.h"

#if ENGINE_HAVE_CUDA
#include "core/cuda_check.h"
#include "core/stream.h"
#include "kernels/cuda/handles.h"
#endif

namespace {

using namespace engine;
using namespace engine::bench::train;

}  // namespace

int main(int argc, char** argv) {
  cpu_fast::prefer_passive_omp_wait(argv);  // as cnn_train: the threads of what is timed wait the same way
  CLI::App app{"End-to-end training throughput (images/s) of the engine"};
  Config c;
  bool costs = false;
  std::int64_t costs_batch = 1;
  app.add_option("--models", c.models, "zoo models to run")->delimiter(',');
  app.add_option("--batches", c.batches, "batch sizes")->delimiter(',');
  app.add_option("--warmup", c.warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--steps", c.steps, "timed steps")->check(CLI::PositiveNumber);
  app.add_flag("--epoch", c.epoch, "time one whole epoch instead of --steps");
  apps::add_choice_option(
      app, "--precision", c.precision, apps::kPrecisionChoices,
      "cnn_train --precision: tf32 (PyTorch's default: TF32 convolutions, fp32 Linear), fp32 (no TF32) or "
      "bf16 (autocast at Conv2d and Linear; on the CPU, with --cpu, an exact emulation in float32)");
  apps::add_choice_option(app, "--layout", c.layout_flag, apps::kLayoutChoices, apps::kLayoutHelp);
  apps::add_choice_option(app, "--cpu-conv-algo", c.cpu_conv_algo, apps::kCpuConvAlgoChoices,
                          apps::kCpuConvAlgoHelp);
  app.add_flag("--implicit-gemm-conv", c.implicit_gemm_conv,
               "the implicit-GEMM convolution (kernels/cuda/conv2d_implicit_gemm.cu) instead of cuDNN");
  app.add_flag(
      "--deterministic", c.deterministic,
      "cnn_train --deterministic's cuDNN algorithms (heuristic, deterministic) instead of its default, "
      "the benchmark search (cudnnFind)");
  app.add_option("--json", c.json_path, "also write one JSON object per case to this file (JSON lines)");
  app.add_flag("--costs", costs, "print the per-layer FLOPs and bytes of every zoo model and exit");
  app.add_option("--costs-batch", costs_batch, "the batch --costs counts at (bytes depend on it)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--smoke", c.smoke, "CPU: mnist_cnn, batch 4, 2 steps (for CI)");
  app.add_flag("--cpu", c.cpu, "train on the CPU device (threads: OMP_NUM_THREADS)");
  app.add_flag("--cuda-graph", c.cuda_graph,
               "GPU: time replays of the whole step captured as one CUDA graph (cnn_train --cuda-graph's "
               "mode: epoch, batch and dropout offsets from the device step state)");
  app.add_flag("--no-fusion", c.no_fusion,
               "run BatchNorm2d and the ReLU after it as separate kernels and add every conv bias "
               "(no fusion pass, layers/fusion.h), to compare");
  CLI11_PARSE(app, argc, argv);

  try {
    const apps::ResolvedLayout layout =
        apps::resolve_layout(c.layout_flag, !c.cpu && !c.smoke, cpu_fast::onednn_isa());
    c.layout = layout.layout;
    if (costs) {
      for (const std::string& m : layers::model_names()) {
        std::printf("%s\n", bench::format_model_cost(bench::zoo_model_cost(m, costs_batch)).c_str());
      }
      return 0;
    }
    std::ofstream json;
    if (!c.json_path.empty()) {
      json.open(c.json_path);
      ENGINE_CHECK(json.good(), "train_bench: cannot write {}", c.json_path);
    }
    if (c.smoke) {
      c.models = {"mnist_cnn"};
      c.batches = {4};
      c.warmup = 1;
      c.steps = 2;
      c.epoch = false;
      const data::Dataset d = engine::bench::random_dataset(64, 1, 28, 28);
      std::printf(
          "train_bench --smoke: CPU, mnist_cnn, batch 4, 1 warm-up + 2 timed steps on random 1x28x28 "
          "data (not performance data; GPU timing needs scripts/bench.sh)\n");
      const Result r = run_case(c, "mnist_cnn", 4, d, Device::cpu(), nullptr, nullptr);
      print_result(r, c);
      if (json.is_open()) json << to_json(r, c, "cpu", "random").dump() << std::endl;  // flushed, as above
      std::printf("%s", bench::format_model_cost(bench::zoo_model_cost("mnist_cnn", 1)).c_str());
      return 0;
    }
    if (c.cpu) {
      cpu_fast::set_conv_algo(apps::effective_cpu_conv_algo(c.cpu_conv_algo, c.deterministic));
      const char* threads = std::getenv("OMP_NUM_THREADS");
      std::string source;
      const data::Dataset cifar = cifar_or_random(source);
      const data::Dataset mnist = engine::bench::random_dataset(6400, 1, 28, 28);
      const char* wait = std::getenv("OMP_WAIT_POLICY");
      std::printf(
          "train_bench on the CPU (OMP_NUM_THREADS=%s, OMP_WAIT_POLICY=%s; %s; 3x3 convolutions %s; layout "
          "%s "
          "(%s)): data %s (mnist_cnn: random 1x28x28); %d warm-up steps, then %s\n",
          threads != nullptr ? threads : "unset", wait != nullptr ? wait : "unset",
          cpu_fast::host_probe_line(cpu_fast::host_probe()).c_str(),
          cpu_fast::conv_algo_name(cpu_fast::conv_algo()), std::string(layout_name(c.layout)).c_str(),
          layout.why.c_str(), source.c_str(), c.warmup,
          c.epoch ? "one timed epoch" : (std::to_string(c.steps) + " timed steps").c_str());
      for (const std::string& m : c.models) {
        for (std::int64_t b : c.batches) {
          const bool is_mnist = m == "mnist_cnn";
          const Result r = run_case(c, m, b, is_mnist ? mnist : cifar, Device::cpu(), nullptr, nullptr);
          print_result(r, c);
          if (json.is_open())
            json << to_json(r, c, "cpu", is_mnist ? "random 1x28x28" : source).dump() << std::endl;
        }
      }
      return 0;
    }
#if ENGINE_HAVE_CUDA
    ENGINE_CHECK(device_count() > 0, "train_bench: no CUDA device visible (use --smoke on a CPU machine)");
    set_device(0);
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    const std::string device = prop.name;
    std::string source;
    const data::Dataset d = cifar_or_random(source);
    std::printf("train_bench on %s: data %s (%lld images), %s, %s conv%s; %d warm-up steps, then %s\n",
                device.c_str(), source.c_str(), static_cast<long long>(d.size()),
                c.precision == apps::Precision::Tf32
                    ? "TF32 convolutions"
                    : (c.precision == apps::Precision::Bf16 ? "bf16 autocast (TF32 convolutions)" : "fp32"),
                c.implicit_gemm_conv ? "implicit-GEMM" : "cuDNN",
                c.deterministic ? " (deterministic, heuristic)" : " (benchmark search)", c.warmup,
                c.epoch ? "one timed epoch" : (std::to_string(c.steps) + " timed steps").c_str());
    for (const std::string& m : c.models) {
      for (std::int64_t b : c.batches) {
        Stream stream(0);
        // cnn_train's selection policy (kernels/cuda/handles.h), so the bench times what the program runs.
        cuda::CudaHandles handles(
            0, stream.get(),
            cuda::training_handles_options(c.deterministic, apps::tf32_convolutions(c.precision)));
        device_allocator(0).reset_peak();
        const Result r = run_case(c, m, b, d, Device::cuda(0), stream.get(), &handles);
        print_result(r, c);
        if (json.is_open()) json << to_json(r, c, device, source).dump() << std::endl;  // flushed, as above
      }
    }
    std::printf("* epoch time = steps per epoch x measured step time (--epoch measures a whole one)\n");
    return 0;
#else
    std::fprintf(stderr, "train_bench: CPU-only build; only --smoke and --costs run here\n");
    return 2;
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_bench: %s\n", e.what());
    return 1;
  }
}
