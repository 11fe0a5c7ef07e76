#include "benchmarks/train/train_case.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "apps/train/precision.h"
#include "apps/train/run_clock.h"
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

namespace engine::bench::train {

namespace {

using Clock = std::chrono::steady_clock;
const cpu::SgdOptions kSgd{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4};

// The CPU time of all the process's threads (compute, loader): with passively waiting OpenMP threads
// (kernels/cpu_fast/omp_wait.h) the work done, which a competing process inflates far less than the wall
// clock (an A/B on a shared machine).
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

data::Dataset cifar_or_random(std::string& source) {
  try {
    data::Dataset d = data::load_cifar10(data::default_cifar10_root(), data::Split::Train);
    source = "cifar10:" + data::default_cifar10_root();
    return d;
  } catch (const Error&) {
    source = "random";
    return engine::bench::random_dataset(kEpochImages, 3, 32, 32);
  }
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
  lo.image_layout = c.layout == Layout::NHWC ? Layout::NHWC : Layout::NCHW;  // blocked models: NCHW images
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
  // Timed as cnn_train times an epoch (apps/train/run_clock.h): from the first timed step's start to the end
  // of the steps' work on the device.
  apps::RunClock clock;
  const double cpu_start = process_cpu_seconds();
  clock.epoch_start({.batches = timed});
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
  clock.epoch_trained({.steps = timed, .samples = batch * timed});
  const double seconds = clock.epoch_seconds();
  const double cpu_seconds = process_cpu_seconds() - cpu_start;

  Result r;
  r.model = model_name;
  r.batch = batch;
  r.steps = timed;
  r.images_per_s = clock.images_per_second();
  r.step_ms = 1e3 * seconds / timed;
  r.epoch_measured = c.epoch;
  r.epoch_s = c.epoch ? seconds : static_cast<double>(steps_per_epoch) * seconds / timed;
  r.host_ms = median(host_ms);
  r.cpu_ms = 1e3 * cpu_seconds / timed;
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

}  // namespace engine::bench::train
