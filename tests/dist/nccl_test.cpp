// NCCL with world size 1 (label gpu): the process group, model agreement and the Reducer on a CUDA model.
// Skipped where no device is visible.

#include <chrono>

#include <gtest/gtest.h>

#include "core/device.h"
#include "core/stream.h"
#include "dist/bootstrap.h"
#include "dist/model_sync.h"
#include "dist/reducer.h"
#include "dist/tcp_store.h"
#include "kernels/cuda/handles.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/common/gpu.h"

namespace engine::dist {
namespace {

TEST(Nccl, WorldSizeOneEndToEnd) {
  SKIP_WITHOUT_GPU();
  DistEnv env;
  env.master_port = find_free_port();
  auto pg = init_process_group(env, Backend::Nccl, std::chrono::milliseconds(60000), 0);
  ASSERT_EQ(pg->backend(), "nccl");

  Tensor t = Tensor::from_vector(std::vector<float>{1.f, 2.f, 3.f}, {3}).to(Device::cuda(0));
  pg->all_reduce(t, ReduceOp::Avg);
  EXPECT_EQ(t.to(Device::cpu()).to_vector<float>(), (std::vector<float>{1.f, 2.f, 3.f}));
  pg->barrier();

  Stream stream(0);
  cuda::CudaHandles handles(0, stream.get());
  layers::Model m = layers::build_model("cnn3", 3, 10, 32, 32);
  layers::ExecutionContext ctx;
  ctx.device = Device::cuda(0);
  ctx.stream = stream.get();
  ctx.handles = &handles;
  m.finalize(ctx, 1);
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

}  // namespace
}  // namespace engine::dist
