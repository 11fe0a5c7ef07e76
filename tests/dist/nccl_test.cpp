// NCCL with world size 1 (label gpu): the process group, model agreement and the Reducer on a CUDA model
// (its timeline too, and on a training trace). Skipped where no device is visible.

#include <bit>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/device.h"
#include "core/dtype.h"
#include "core/philox.h"
#include "core/stream.h"
#include "core/trace.h"
#include "dist/bootstrap.h"
#include "dist/model_sync.h"
#include "dist/reducer.h"
#include "dist/tcp_store.h"
#include "kernels/cuda/handles.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/common/gpu.h"
#include "tests/common/trace_checks.h"
#include "tests/dist/timeline_checks.h"

namespace engine::dist {
namespace {

// cnn3 finalized on cuda:0 with its own stream and handles (members in construction order).
struct CudaCnn3 {
  Stream stream{0};
  cuda::CudaHandles handles{0, stream.get()};
  layers::Model model = layers::build_model("cnn3", 3, 10, 32, 32);

  CudaCnn3() {
    layers::ExecutionContext ctx;
    ctx.device = Device::cuda(0);
    ctx.stream = stream.get();
    ctx.handles = &handles;
    model.finalize(ctx, 1);
  }
};

// An NCCL group of one rank on cuda:0, its store on a free local port.
std::unique_ptr<ProcessGroup> nccl_world_of_one() {
  DistEnv env;
  env.master_port = find_free_port();
  return init_process_group(env, Backend::Nccl, std::chrono::milliseconds(60000), 0);
}

TEST(Nccl, WorldSizeOneEndToEnd) {
  SKIP_WITHOUT_GPU();
  const std::unique_ptr<ProcessGroup> pg = nccl_world_of_one();
  ASSERT_EQ(pg->backend(), "nccl");

  Tensor t = Tensor::from_vector(std::vector<float>{1.f, 2.f, 3.f}, {3}).to(Device::cuda(0));
  pg->all_reduce(t, ReduceOp::Avg);
  EXPECT_EQ(t.to(Device::cpu()).to_vector<float>(), (std::vector<float>{1.f, 2.f, 3.f}));
  pg->barrier();

  CudaCnn3 net;
  layers::Model& m = net.model;
  verify_same_model(*pg, m);
  broadcast_parameters(*pg, m);
  Reducer reducer(*pg, m);
  const Tensor x = Tensor::zeros({8, 3, 32, 32}, DType::F32, Device::cuda(0));
  Tensor labels = Tensor::zeros({8}, DType::I32).to(Device::cuda(0));
  layers::SoftmaxCrossEntropy loss;
  loss.forward(m.context(), m.forward(x, layers::Mode::Train), labels);
  m.backward(loss.backward());
  reducer.finish();
  pg->synchronize(m.context().stream);
  EXPECT_EQ(reducer.allreduce_count(), static_cast<std::int64_t>(reducer.buckets().size()));
}

// bf16 compression on CUDA: the cast kernels round each bucket on the compute stream, NCCL sums the bf16
// wire, finish() widens it times 1/world_size. With one rank the sum is the rank's own bf16 gradient and the
// scale is 1, so the gradients after finish() are exactly the bf16-rounded gradients of the backward.
TEST(Nccl, WorldSizeOneBf16CompressionGivesTheRoundedGradients) {
  SKIP_WITHOUT_GPU();
  const std::unique_ptr<ProcessGroup> pg = nccl_world_of_one();
  CudaCnn3 net;
  layers::Model& m = net.model;
  ReducerOptions options;
  options.compression = GradCompression::Bf16;
  options.first_bucket_mb = 0.25;  // several buckets, so the per-bucket casts must tile the buffer
  options.bucket_mb = 1.0;
  Reducer reducer(*pg, m, options);
  ASSERT_GT(reducer.buckets().size(), 2u);

  constexpr std::int64_t kBatch = 8;
  std::vector<float> xs(kBatch * 3 * 32 * 32);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = philox_uniform(5, 0, i) - 0.5f;
  std::vector<std::int32_t> ls(kBatch);
  for (std::size_t i = 0; i < ls.size(); ++i) ls[i] = static_cast<std::int32_t>(i % 10);
  const Tensor x = Tensor::from_vector(xs, {kBatch, 3, 32, 32}).to(Device::cuda(0), net.stream.get());
  const Tensor labels = Tensor::from_vector(ls, {kBatch}).to(Device::cuda(0), net.stream.get());
  layers::SoftmaxCrossEntropy loss;
  loss.forward(m.context(), m.forward(x, layers::Mode::Train), labels);
  m.backward(loss.backward());
  // The float32 gradients of this backward: the casts only read them, finish() overwrites them.
  const std::vector<float> before = m.flat_gradients().to(Device::cpu(), net.stream.get()).to_vector<float>();
  reducer.finish();
  const std::vector<float> after = m.flat_gradients().to(Device::cpu(), net.stream.get()).to_vector<float>();
  EXPECT_EQ(reducer.allreduce_count(), static_cast<std::int64_t>(reducer.buckets().size()));

  ASSERT_EQ(after.size(), before.size());
  std::size_t rounded = 0, bad = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const float want = from_bfloat16(to_bfloat16(before[i]));
    if (want != before[i]) ++rounded;
    // Bit patterns compared (a NaN or -0 must come back as sent).
    if (std::bit_cast<std::uint32_t>(want) != std::bit_cast<std::uint32_t>(after[i]) && ++bad <= 8) {
      ADD_FAILURE() << "gradient " << i << ": got " << after[i] << ", want bf16(" << before[i]
                    << ") = " << want;
    }
  }
  EXPECT_EQ(bad, 0u) << "of " << before.size();
  EXPECT_GT(rounded, before.size() / 2) << "the gradients should mostly not be bf16 numbers already";
}

// One cnn3 on the GPU, a world of one through NCCL and a Reducer recording its timeline (buckets of 0.25 MB
// then 1 MB: several of them), and a batch of zeros: what the timeline and trace tests share.
struct TimedNcclStep {
  std::unique_ptr<ProcessGroup> pg = nccl_world_of_one();
  CudaCnn3 net;
  std::unique_ptr<Reducer> reducer;
  Tensor x = Tensor::zeros({8, 3, 32, 32}, DType::F32, Device::cuda(0));
  Tensor labels = Tensor::zeros({8}, DType::I32).to(Device::cuda(0));
  layers::SoftmaxCrossEntropy loss;

  TimedNcclStep() {
    ReducerOptions options;
    options.first_bucket_mb = 0.25;
    options.bucket_mb = 1.0;
    options.record_timeline = true;
    reducer = std::make_unique<Reducer>(*pg, net.model, options);
  }
  void forward_backward() {
    layers::Model& m = net.model;
    loss.forward(m.context(), m.forward(x, layers::Mode::Train), labels);
    m.backward(loss.backward());
  }
};

// The timeline's events on CUDA: every bucket's ready <= queued (compute stream) <= start <= end (the
// communication stream, after waiting for the compute stream), buckets one after another on that stream.
TEST(Nccl, WorldSizeOneTimelineOrdersEveryBucketsEvents) {
  SKIP_WITHOUT_GPU();
  TimedNcclStep s;
  const std::size_t n = s.reducer->buckets().size();
  ASSERT_GT(n, 2u);
  for (int step = 0; step < 2; ++step) {  // the second mark reads the first step's events first
    s.reducer->mark_step_start();
    s.forward_backward();
    s.reducer->finish();
  }
  s.net.stream.synchronize();
  const StepTimeline& t = s.reducer->timeline();
  testing::expect_ordered_timeline(t, n, s.net.model.flat_gradients().nbytes());
  EXPECT_LT(t.buckets.front().start_ms, t.backward_end_ms) << "the first bucket overlaps backward";
}

// cnn_train --trace on a GPU: the step and layer spans are timing events on the compute stream, the
// all-reduces events on the communication stream; every bucket lands inside its step on the communication
// track, after the backward of its layers began.
TEST(Nccl, WorldSizeOneTraceHasEveryBucketsAllReduceInsideItsStep) {
  SKIP_WITHOUT_GPU();
  TimedNcclStep s;
  const std::size_t n = s.reducer->buckets().size();
  ASSERT_GT(n, 2u);
  trace::Recorder recorder(s.net.stream.get());
  for (int step = 0; step < 2; ++step) {
    const std::size_t span =
        recorder.begin_at("step " + std::to_string(step + 1), "step", s.reducer->mark_step_start());
    trace::set_active(&recorder);
    s.forward_backward();
    trace::set_active(nullptr);
    s.reducer->finish();
    recorder.end(span);
    s.reducer->trace_timeline(recorder, span);
  }
  s.net.stream.synchronize();
  engine::testing::expect_all_reduces_in_every_step(recorder.spans(), n, 2, 0.01);
}

}  // namespace
}  // namespace engine::dist
