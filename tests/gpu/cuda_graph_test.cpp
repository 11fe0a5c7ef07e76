// CUDA graphs (core/cuda_graph.h) with the device step state (apps/train/step_state_buffer.h) and the
// allocator's graph pools (core/caching_allocator.h), on a real device: a replayed graph reading its learning
// rate from the step state equals eager steps bit for bit; memory a capture touched is not handed out while
// the graph lives; a capture that the body breaks falls back with a reason; kernel nodes are counted.
#include "core/cuda_graph.h"

#include <cstddef>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "apps/train/step_state.h"
#include "apps/train/step_state_buffer.h"
#include "core/allocator.h"
#include "core/caching_allocator.h"
#include "core/cuda_check.h"
#include "core/stream.h"
#include "kernels/cpu/sgd.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/sgd.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "optim/sgd.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

// Eager steps take their rate as an argument; the graph was captured once and reads each replay's rate from
// the step state the host publishes before the launch. Same double, same operations: equal bit for bit.
TEST(CudaGraphStep, ReplayedSgdWithAChangingRateEqualsEagerStepsBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const std::int64_t n = 4099;  // not a multiple of 4: the scalar tail runs too
  const cpu::SgdOptions o{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  const auto start = nonzero_floats(n, 11);
  Tensor eager_p = to_device(start, s), graph_p = to_device(start, s);
  Tensor eager_m = Tensor::zeros({n}, DType::F32, Device::cuda(0), s);
  Tensor graph_m = Tensor::zeros({n}, DType::F32, Device::cuda(0), s);
  Tensor grads = to_device(nonzero_floats(n, 12), s);
  apps::StepStateBuffer state(0, s);
  const double* device_lr = state.device_field<double>(offsetof(apps::StepState, lr));
  const std::vector<double> rates{0.1, 0.07, 0.0301, 0.5, 1e-3, 0.0};
  // Step 0 eagerly on both (the momentum buffer's first step differs), as the trainer's warm-up step.
  cuda::sgd_step(s, o, eager_p.data<float>(), grads.data<float>(), eager_m.data<float>(), n, true);
  cuda::sgd_step(s, o, graph_p.data<float>(), grads.data<float>(), graph_m.data<float>(), n, true);
  CudaGraph graph;
  const std::string failed = graph.capture(s, [&] {
    cuda::sgd_step(s, o, graph_p.data<float>(), grads.data<float>(), graph_m.data<float>(), n, false,
                   /*bf16_mirror=*/nullptr, device_lr);
  });
  ASSERT_EQ(failed, "");
  EXPECT_EQ(graph.kernel_nodes(), 1u);
  for (std::size_t i = 0; i < rates.size(); ++i) {
    cpu::SgdOptions step = o;
    step.lr = rates[i];
    cuda::sgd_step(s, step, eager_p.data<float>(), grads.data<float>(), eager_m.data<float>(), n, false);
    apps::StepState st;
    st.lr = rates[i];
    state.publish(st);
    graph.launch(s);
    ASSERT_TRUE(bitwise_equal(to_host<float>(graph_p, s), to_host<float>(eager_p, s))) << "step " << i + 1;
    ASSERT_TRUE(bitwise_equal(to_host<float>(graph_m, s), to_host<float>(eager_m, s))) << "step " << i + 1;
  }
}

// One training process's pieces for the whole-step test: a stream, deterministic handles, resnet18 (no
// Dropout: its offsets are not in the step state yet) on 32x32 images, its loss and SGD.
struct ModelRun {
  Stream stream{0};
  cuda::CudaHandles handles{0, stream.get(), cuda::training_handles_options(/*deterministic=*/true, false)};
  layers::Model model = layers::build_model("resnet18", 3, 10, 32, 32);
  layers::SoftmaxCrossEntropy loss;
  std::unique_ptr<optim::Sgd> sgd;

  ModelRun() {
    layers::ExecutionContext ctx;
    ctx.device = Device::cuda(0);
    ctx.stream = stream.get();
    ctx.handles = &handles;
    model.finalize(ctx, /*init_seed=*/5);
    sgd = std::make_unique<optim::Sgd>(model, optim::SgdConfig{.momentum = 0.9, .weight_decay = 5e-4});
  }
  void step(const Tensor& x, const Tensor& labels, double lr) {
    const Tensor logits = model.forward(x, layers::Mode::Train);
    (void)loss.forward(model.context(), logits, labels);
    model.backward(loss.backward());
    sgd->step(lr);
  }
};

// Forward, loss, backward and SGD of a real model captured once and replayed with a changing rate from the
// step state equal eager steps bit for bit in deterministic mode (the same kernels on the same data in the
// same order; only the rate's source differs). The captured step's memory comes from a graph pool.
TEST(CudaGraphStep, ACapturedModelStepReplayedEqualsEagerStepsBitwise) {
  SKIP_WITHOUT_GPU();
  ModelRun eager, graphed;
  const cudaStream_t s = graphed.stream.get();
  const std::int64_t n = 16;
  std::vector<std::int32_t> label_values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) label_values[static_cast<std::size_t>(i)] = static_cast<int>(i % 10);
  const auto pixels = nonzero_floats(static_cast<std::size_t>(n * 3 * 32 * 32), 77, -1.0f, 1.0f);
  Tensor x_eager = to_device(pixels, eager.stream.get()).view({n, 3, 32, 32});
  Tensor y_eager = to_device(label_values, eager.stream.get());
  Tensor x_graph = to_device(pixels, s).view({n, 3, 32, 32});
  Tensor y_graph = to_device(label_values, s);
  const std::vector<double> rates{0.1, 0.1, 0.05, 0.02, 0.2, 0.0};
  // The warm-up step, eager on both: cuDNN plans, workspaces, every buffer, the momentum's first step.
  eager.step(x_eager, y_eager, rates[0]);
  graphed.step(x_graph, y_graph, rates[0]);
  apps::StepStateBuffer state(0, s);
  graphed.sgd->set_device_lr(state.device_field<double>(offsetof(apps::StepState, lr)));
  CachingAllocator& alloc = device_caching_allocator(0);
  const std::uint64_t pool = alloc.create_graph_pool();
  alloc.begin_graph_capture(s, pool);
  CudaGraph graph;
  const std::string failed = graph.capture(s, [&] { graphed.step(x_graph, y_graph, rates[1]); });
  alloc.end_graph_capture(s);
  ASSERT_EQ(failed, "");
  EXPECT_GT(graph.kernel_nodes(), 20u);
  for (std::size_t i = 1; i < rates.size(); ++i) {
    eager.step(x_eager, y_eager, rates[i]);
    apps::StepState st;
    st.lr = rates[i];
    state.publish(st);
    graph.launch(s);
    ASSERT_TRUE(bitwise_equal(to_host<float>(graphed.model.flat_parameters(), s),
                              to_host<float>(eager.model.flat_parameters(), eager.stream.get())))
        << "weights after step " << i;
    ASSERT_TRUE(bitwise_equal(to_host<float>(graphed.sgd->momentum_buffer(), s),
                              to_host<float>(eager.sgd->momentum_buffer(), eager.stream.get())))
        << "momentum after step " << i;
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  graph = CudaGraph();
  alloc.release_graph_pool(pool);
}

// The device allocator's pool: blocks the capture allocated or freed are never handed to eager allocations
// while the graph lives, and come back to the shared cache once the pool is released.
TEST(CudaGraphPool, NoBlockTheCaptureTouchedIsReusedWhileTheGraphLives) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  CachingAllocator& alloc = device_caching_allocator(0);
  const std::int64_t n = 1 << 16;
  auto before = std::make_unique<Tensor>(Tensor::zeros({n}, DType::F32, Device::cuda(0), s));
  const void* before_ptr = before->raw_data();
  const std::uint64_t pool = alloc.create_graph_pool();
  alloc.begin_graph_capture(s, pool);
  Tensor kept;
  const void* scratch_ptr = nullptr;
  CudaGraph graph;
  const std::string failed = graph.capture(s, [&] {
    Tensor scratch = Tensor::empty({n}, DType::F32, Device::cuda(0), s);
    scratch.fill_bytes(0, s);
    scratch_ptr = scratch.raw_data();
    before.reset();  // freed during the capture: joins the pool
    kept = Tensor::empty({n}, DType::F32, Device::cuda(0), s);
    kept.fill_bytes(0, s);
  });
  alloc.end_graph_capture(s);
  ASSERT_EQ(failed, "");
  std::set<const void*> eager;
  std::vector<Tensor> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(Tensor::empty({n}, DType::F32, Device::cuda(0), s));
    eager.insert(held.back().raw_data());
  }
  EXPECT_FALSE(eager.contains(before_ptr)) << "a block the capture freed went to eager work";
  EXPECT_FALSE(eager.contains(scratch_ptr)) << "a block the capture allocated went to eager work";
  EXPECT_FALSE(eager.contains(kept.raw_data()));
  graph.launch(s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  held.clear();
  graph = CudaGraph();
  alloc.release_graph_pool(pool);
}

TEST(CudaGraph, ACaptureTheBodyBreaksFallsBackWithAReasonAndTheStreamStaysUsable) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  Tensor t = Tensor::zeros({256}, DType::F32, Device::cuda(0), s);
  CudaGraph graph;
  const std::string failed = graph.capture(s, [&] {
    t.fill_bytes(0, s);
    CUDA_CHECK(cudaStreamSynchronize(s));  // not allowed while capturing
  });
  EXPECT_NE(failed, "");
  EXPECT_FALSE(graph.captured());
  t.fill_bytes(0, s);  // eager work goes on
  CUDA_CHECK(cudaStreamSynchronize(s));
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace
}  // namespace engine
