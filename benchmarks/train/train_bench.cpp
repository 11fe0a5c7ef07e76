// train_bench: end-to-end training throughput of the engine, the loop a trainer runs and nothing else:
// data::Loader (GPU-resident: the uint8 dataset on the GPU, one gather+augment+normalize kernel a batch) ->
// layers::Model forward -> layers::SoftmaxCrossEntropy -> Model backward -> one fused SGD step over the flat
// parameter buffer (kernels/cuda/sgd.h). One process, so the all-reduce phase is 0 (no DDP in this program).
//
// For each model and batch: `--warmup` steps (cuDNN plans, the allocator's cache, the loader's first epoch
// start), then `--steps` timed steps (or a whole epoch with --epoch), timed with CUDA events and the host
// clock around the synchronized run. Reported: images/s, time per epoch (50,000 images: measured with
// --epoch, else steps-per-epoch x the measured step time), peak device memory (the caching allocator's peak,
// which includes the 150 MB resident dataset), the per-phase median from events (step_timer.h), the
// achieved model TFLOP/s (forward + backward FLOPs per image from benchmarks/common/layer_costs.h), the host
// time per step (the median time the issuing thread takes to queue one step, no synchronization inside: what
// bounds the step once the GPU is faster than the host), and on a GPU the kernels per step (one step captured
// into a CUDA graph after the timed run, never launched: its kernel nodes, core/cuda_graph.h; "n/a" with the
// reason when the step cannot be captured).
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

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/cli/choice_option.h"
#include "apps/train/layout_flag.h"
#include "apps/train/precision.h"
#include "apps/train/step_state_buffer.h"
#include "benchmarks/common/layer_costs.h"
#include "benchmarks/common/random_dataset.h"
#include "benchmarks/train/step_timer.h"
#include "core/allocator.h"
#include "core/caching_allocator.h"
#include "core/device.h"
#include "core/error.h"
#include "data/cifar10.h"
#include "data/loader.h"
#include "kernels/cpu_fast/sgd.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"

#if ENGINE_HAVE_CUDA
#include "core/cuda_check.h"
#include "core/cuda_graph.h"
#include "core/stream.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/sgd.h"
#endif

namespace {

using namespace engine;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kEpochImages = 50000;
const cpu::SgdOptions kSgd{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4};

struct Config {
  std::vector<std::string> models{"vgg6", "resnet18"};
  std::vector<std::int64_t> batches{128, 512};
  int warmup = 15;
  int steps = 100;
  bool epoch = false;
  apps::Precision precision = apps::Precision::Tf32;  // cnn_train's default
  Layout layout = Layout::NCHW;                       // cnn_train's default
  bool implicit_gemm_conv = false;
  bool deterministic = false;
  std::string json_path;
  bool smoke = false;
  bool cpu = false;
  bool no_fusion = false;   // Model::set_fusion(false): no BatchNorm+ReLU fusion, no conv-bias fold
  bool cuda_graph = false;  // time replays of one captured step
};

// CIFAR-10's training split when CIFAR10_DIR (or ~/.cache/cnn_engine/cifar10) holds it, else random images.
[[maybe_unused]] data::Dataset cifar_or_random(std::string& source) {
  try {
    data::Dataset d = data::load_cifar10(data::default_cifar10_root(), data::Split::Train);
    source = "cifar10:" + data::default_cifar10_root();
    return d;
  } catch (const Error&) {
    source = "random";
    return engine::bench::random_dataset(kEpochImages, 3, 32, 32);
  }
}

struct Result {
  std::string model;
  std::int64_t batch = 0;
  int steps = 0;
  double images_per_s = 0, epoch_s = 0, step_ms = 0;
  double peak_bytes = 0;
  std::array<double, bench::kPhases> phase_ms{};
  double model_tflop_s = 0;
  double final_loss = 0;
  bool epoch_measured = false;
  double host_ms = 0;               // median host time to queue one step
  long long kernels_per_step = -1;  // -1: not counted (the CPU, or the capture failed: kernels_note says why)
  std::string kernels_note;
  bool cuda_graph = false;  // the timed steps were graph replays (phase_ms then holds only the whole step)
  double replay_ms = 0;     // --cuda-graph: median time of one replay (CUDA events)
};

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void print_result(const Result& r, const Config& c) {
  std::printf(
      "%-9s batch %4lld  %9.0f images/s  epoch %7.2f s%s  step %8.3f ms  peak %7.0f MB  %6.2f TFLOP/s"
      "  loss %.3f\n",
      r.model.c_str(), static_cast<long long>(r.batch), r.images_per_s, r.epoch_s,
      r.epoch_measured ? "" : "*", r.step_ms, r.peak_bytes / 1e6, r.model_tflop_s, r.final_loss);
  std::printf("          host %.3f ms/step (to queue it, median)  kernels/step %s\n", r.host_ms,
              r.kernels_per_step >= 0 ? std::to_string(r.kernels_per_step).c_str()
                                      : ("n/a (" + r.kernels_note + ")").c_str());
  if (r.cuda_graph) {
    std::printf("          per step (median of %d, CUDA events): one graph replay %.3f ms\n", r.steps,
                r.replay_ms);
    std::fflush(stdout);
    return;
  }
  std::printf("          per step (median of %d, %s): ", r.steps,
              c.smoke || c.cpu ? "host clock" : "CUDA events");
  for (std::size_t p = 0; p < bench::kPhases; ++p)
    std::printf("%s %.3f ms%s", bench::phase_name(static_cast<bench::Phase>(p)), r.phase_ms[p],
                p + 1 < bench::kPhases ? ", " : "\n");
  std::fflush(stdout);  // a run cut short by a time limit keeps its finished cases in the log
}

nlohmann::json to_json(const Result& r, const Config& c, const std::string& device, const std::string& data) {
  nlohmann::json phases;
  for (std::size_t p = 0; p < bench::kPhases; ++p)
    phases[bench::phase_name(static_cast<bench::Phase>(p))] = r.phase_ms[p];
  if (r.cuda_graph) phases = {{"graph_replay", r.replay_ms}};
  const std::string conv =
      c.implicit_gemm_conv ? " implicit-gemm conv" : (c.deterministic ? " cudnn deterministic" : " cudnn");
  return {{"impl", "engine"},
          {"setting", c.cpu || c.smoke
                          ? std::string(apps::autocast_bf16(c.precision) ? "cpu bf16 (emulated)" : "cpu fp32")
                          : std::string(apps::choice_name(apps::kPrecisionChoices, c.precision)) + conv},
          {"layout", apps::choice_name(apps::kLayoutChoices, c.layout)},
          {"model", r.model},
          {"batch", r.batch},
          {"device", device},
          {"data", data},
          {"steps", r.steps},
          {"images_per_s", r.images_per_s},
          {"epoch_s", r.epoch_s},
          {"epoch_measured", r.epoch_measured},
          {"step_ms", r.step_ms},
          {"peak_mem_bytes", r.peak_bytes},
          {"breakdown_ms", phases},
          {"allreduce_note", "one process: no all-reduce"},
          {"model_tflop_s", r.model_tflop_s},
          {"final_loss", r.final_loss},
          {"host_ms_per_step", r.host_ms},
          {"kernels_per_step",
           r.kernels_per_step >= 0 ? nlohmann::json(r.kernels_per_step) : nlohmann::json(nullptr)},
          {"kernels_note", r.kernels_note},
          {"cuda_graph", r.cuda_graph}};
}

// One model at one batch on `device`. `stream` and `handles` are CUDA's (nullptr on the CPU).
Result run_case(const Config& c, const std::string& model_name, std::int64_t batch,
                const data::Dataset& dataset, Device device, void* stream, void* handles) {
  layers::ExecutionContext ctx;
  ctx.device = device;
  ctx.stream = stream;
  ctx.handles = static_cast<cuda::CudaHandles*>(handles);
  ctx.dropout_seed = 1;
  ctx.allow_tf32 = apps::tf32_convolutions(c.precision);
  ctx.autocast_bf16 = apps::autocast_bf16(c.precision);
  ctx.conv_algorithm =
      c.implicit_gemm_conv ? layers::ConvAlgorithm::ImplicitGemm : layers::ConvAlgorithm::Cudnn;
  ctx.layout = c.layout;
  layers::Model model =
      layers::build_model(model_name, static_cast<int>(dataset.channels), 10,
                          static_cast<int>(dataset.height), static_cast<int>(dataset.width));
  model.set_fusion(!c.no_fusion);
  model.finalize(ctx, /*init_seed=*/7);
  layers::SoftmaxCrossEntropy loss;

  data::LoaderOptions lo;
  lo.batch_size = batch;
  lo.drop_last = true;
  lo.device = device;
  lo.gpu_resident = device.is_cuda();
  lo.stream = stream;
  lo.image_layout = c.layout;
  lo.num_workers = 1;
  lo.transform = data::TransformConfig::train({0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}, 3);
  if (dataset.channels == 1) lo.transform = data::TransformConfig::train({0.1307f}, {0.3081f}, 3);
  // --cuda-graph: the values a replay needs per step come from the device step state.
  const bool graphs = c.cuda_graph && device.is_cuda();
  std::unique_ptr<apps::StepStateBuffer> state;
  if (graphs) {
    state = std::make_unique<apps::StepStateBuffer>(device.index, stream);
    lo.device_epoch = state->device_field<std::uint64_t>(offsetof(apps::StepState, augment_epoch));
    lo.device_batch_offset = state->device_field<std::int64_t>(offsetof(apps::StepState, batch_offset));
    model.context().dropout_offset_device =
        state->device_field<std::uint64_t>(offsetof(apps::StepState, dropout_offset));
  }
  data::Loader loader(dataset, data::DistributedSampler(dataset.size(), 1, 0, true, 5), lo);

  const Tensor& params = model.flat_parameters();
  const Tensor& grads = model.flat_gradients();
  // bf16 autocast: the SGD pass also writes the model's bf16 weight mirror (null otherwise).
  bfloat16* mirror =
      model.flat_parameters_bf16().defined() ? model.flat_parameters_bf16().data<bfloat16>() : nullptr;
  Tensor momentum = Tensor::zeros(params.shape(), DType::F32, device, stream);
  Tensor loss_sum = Tensor::zeros({1}, DType::F64, device, stream);
  bool first_sgd_step = true;
  std::uint64_t epoch = 0;
  loader.start_epoch(epoch);

  const std::int64_t steps_per_epoch = loader.num_batches();
  const int timed = c.epoch ? static_cast<int>(steps_per_epoch) : c.steps;
  bench::StepTimer timer(device, stream, static_cast<std::size_t>(timed));

  auto step = [&](bench::StepTimer* t) {
    if (t) t->begin_step();
    data::Batch b;
    if (!loader.next(b)) {
      loader.start_epoch(++epoch);
      ENGINE_CHECK(loader.next(b), "train_bench: an epoch with no batch");
    }
    if (t) t->end(bench::Phase::Data);
    const Tensor logits = model.forward(b.images, layers::Mode::Train);
    loss.forward(model.context(), logits, b.labels, {loss_sum.data<double>(), nullptr});
    if (t) t->end(bench::Phase::Forward);
    model.backward(loss.backward());
    if (t) t->end(bench::Phase::Backward);
    // One process: no all-reduce. (A DDP run would wait on its reducer's buckets here.)
    if (t) t->end(bench::Phase::AllReduce);
    if (device.is_cuda()) {
#if ENGINE_HAVE_CUDA
      cuda::sgd_step(static_cast<cudaStream_t>(stream), kSgd, params.data<float>(), grads.data<float>(),
                     momentum.data<float>(), params.numel(), first_sgd_step, mirror);
#endif
    } else {
      cpu_fast::sgd_step(kSgd, params.data<float>(), grads.data<float>(), momentum.data<float>(),
                         params.numel(), first_sgd_step, mirror);
    }
    first_sgd_step = false;
    if (t) t->end(bench::Phase::Optimizer);
  };
  auto synchronize = [&] {
#if ENGINE_HAVE_CUDA
    if (device.is_cuda()) CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
#endif
  };
  // --cuda-graph: the next step's state (the host starts each epoch itself, so the loader never runs out).
  std::int64_t next_batch = 0;
  auto publish_next = [&] {
    if (!graphs) return;
    if (next_batch == steps_per_epoch) {
      loader.start_epoch(++epoch);
      next_batch = 0;
    }
    apps::StepState s;
    s.lr = kSgd.lr;
    s.augment_epoch = epoch;
    s.batch_offset = next_batch * batch;
    s.dropout_offset = model.context().dropout_offset;
    state->publish(s);
    model.context().dropout_step_base = s.dropout_offset;
    ++next_batch;
  };

  ENGINE_CHECK(!graphs || c.warmup >= 1,
               "train_bench --cuda-graph: needs --warmup >= 1 (the first SGD step "
               "initializes the momentum, which the captured step must not)");
  for (int i = 0; i < c.warmup; ++i) {
    publish_next();
    step(nullptr);
  }
#if ENGINE_HAVE_CUDA
  CudaGraph replayed;
  std::uint64_t replay_pool = 0;
  std::uint64_t dropout_per_step = 0;
  if (graphs) {  // one more step, captured, then run
    CachingAllocator& alloc = device_caching_allocator(device.index);
    replay_pool = alloc.create_graph_pool();
    publish_next();
    const std::uint64_t dropout_before = model.context().dropout_offset;
    alloc.begin_graph_capture(stream, replay_pool);
    std::string failed;
    try {
      failed = replayed.capture(static_cast<cudaStream_t>(stream), [&] { step(nullptr); });
    } catch (...) {
      alloc.end_graph_capture(stream);
      throw;
    }
    alloc.end_graph_capture(stream);
    ENGINE_CHECK(failed.empty(), "train_bench --cuda-graph: {} batch {}: the capture failed: {}", model_name,
                 batch, failed);
    dropout_per_step = model.context().dropout_offset - dropout_before;
    replayed.launch(static_cast<cudaStream_t>(stream));
  }
#endif
  if (c.epoch) {  // the timed epoch starts at its beginning
    loader.start_epoch(++epoch);
    next_batch = 0;
  }
  synchronize();
  loss_sum.fill_bytes(0, stream);
  std::vector<double> host_ms;
  host_ms.reserve(static_cast<std::size_t>(timed));
  const auto start = Clock::now();
  for (int i = 0; i < timed; ++i) {
    const auto queued_from = Clock::now();
    if (graphs) {
#if ENGINE_HAVE_CUDA
      publish_next();
      timer.begin_step();
      replayed.launch(static_cast<cudaStream_t>(stream));
      timer.end(bench::Phase::Optimizer);                  // the whole step: the phases are inside one launch
      model.context().dropout_offset += dropout_per_step;  // what the captured step's Dropouts advanced
#endif
    } else {
      step(&timer);
    }
    host_ms.push_back(1e3 * std::chrono::duration<double>(Clock::now() - queued_from).count());
  }
  synchronize();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  Result r;
  r.model = model_name;
  r.batch = batch;
  r.steps = timed;
  r.images_per_s = static_cast<double>(batch) * timed / seconds;
  r.step_ms = 1e3 * seconds / timed;
  r.epoch_measured = c.epoch;
  r.epoch_s = c.epoch ? seconds : static_cast<double>(steps_per_epoch) * seconds / timed;
  r.host_ms = median(host_ms);
  r.phase_ms = timer.median_ms();
  r.cuda_graph = graphs;
  if (graphs) r.replay_ms = timer.median_step_ms();
  const bench::ModelCost cost = bench::model_cost(model, 1);
  r.model_tflop_s = (cost.forward_flops() + cost.backward_flops()) * r.images_per_s / 1e12;
  const Tensor ls = loss_sum.to(Device::cpu(), stream);
  r.final_loss = ls.data<double>()[0] / (static_cast<double>(batch) * timed);
  ENGINE_CHECK(std::isfinite(r.final_loss), "train_bench: {} batch {}: the loss is not finite ({})",
               model_name, batch, r.final_loss);
  if (device.is_cuda()) {
    r.peak_bytes = static_cast<double>(device_allocator(device.index).stats().peak_bytes_in_use);
#if ENGINE_HAVE_CUDA
    if (graphs) {  // the replayed graph is the step: count its kernels, then release it
      r.kernels_per_step = static_cast<long long>(replayed.kernel_nodes());
      synchronize();
      replayed = CudaGraph();
      device_caching_allocator(device.index).release_graph_pool(replay_pool);
      return r;
    }
    // After the loss was read: the captured step is never launched, so it changes no weight and no sum,
    // but its host side consumes one batch and its freed blocks go to a pool released with the graph.
    CachingAllocator& alloc = device_caching_allocator(device.index);
    const std::uint64_t pool = alloc.create_graph_pool();
    alloc.begin_graph_capture(stream, pool);
    CudaGraph graph;
    std::string failed;
    try {
      failed = graph.capture(static_cast<cudaStream_t>(stream), [&] { step(nullptr); });
    } catch (...) {
      alloc.end_graph_capture(stream);
      throw;
    }
    alloc.end_graph_capture(stream);
    if (failed.empty()) {
      r.kernels_per_step = static_cast<long long>(graph.kernel_nodes());
    } else {
      r.kernels_note = failed;
    }
    graph = CudaGraph();
    synchronize();
    alloc.release_graph_pool(pool);
#endif
  } else {
    r.kernels_note = "the CPU device: no kernels";
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
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
  apps::add_choice_option(app, "--layout", c.layout, apps::kLayoutChoices, apps::kLayoutHelp);
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
      const char* threads = std::getenv("OMP_NUM_THREADS");
      std::string source;
      const data::Dataset cifar = cifar_or_random(source);
      const data::Dataset mnist = engine::bench::random_dataset(6400, 1, 28, 28);
      std::printf(
          "train_bench on the CPU (OMP_NUM_THREADS=%s): data %s (mnist_cnn: random 1x28x28); %d "
          "warm-up steps, then %s\n",
          threads != nullptr ? threads : "unset", source.c_str(), c.warmup,
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
