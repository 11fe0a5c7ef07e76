// A steady state makes no cudaMalloc: after a warm-up, repeated training steps through every CUDA op (cuDNN
// conv with its workspaces, the direct conv with its split-K scratch, batch norm's reduction scratch, cuBLAS,
// the loss) take all their memory from the caching allocator's cache.
#include <vector>

#include <gtest/gtest.h>

#include "core/allocator.h"
#include "core/stream.h"
#include "kernels/cuda/ops.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

// conv(cuDNN) -> BN -> ReLU -> maxpool -> conv(direct) -> global avgpool -> linear -> loss, and back, then
// SGD.
struct TinyNet {
  Conv2dShape conv1{.n = 8, .c = 3, .h = 16, .w = 16, .k = 16, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  BatchNorm2dShape bn{.n = 8, .c = 16, .h = 16, .w = 16};
  Pool2dShape pool{
      .n = 8, .c = 16, .h = 16, .w = 16, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  Conv2dShape conv2{.n = 8, .c = 16, .h = 8, .w = 8, .k = 32, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  LinearShape fc{.n = 8, .in_features = 32, .out_features = 10};
  std::int64_t params = 0;
  Tensor param_buf, grad_buf, momentum_buf;
  float *w1, *b1, *gamma, *beta, *w2, *wf, *bf;
  float *dw1, *db1, *dgamma, *dbeta, *dw2, *dwf, *dbf;
  Tensor x, labels, rm, rv, loss, loss_sum;

  explicit TinyNet(cudaStream_t s) {
    const std::int64_t sizes[] = {
        static_cast<std::int64_t>(conv1.w_size()), 16, 16, 16, static_cast<std::int64_t>(conv2.w_size()),
        static_cast<std::int64_t>(fc.w_size()),    10};
    for (auto n : sizes) params += n;
    param_buf = to_device(nonzero_floats(static_cast<std::size_t>(params), 401, 0.01f, 0.1f), s);
    grad_buf = poisoned<float>(params, s);
    momentum_buf = poisoned<float>(params, s);
    float* p = param_buf.data<float>();
    float* g = grad_buf.data<float>();
    float** slots[] = {&w1, &b1, &gamma, &beta, &w2, &wf, &bf};
    float** grad_slots[] = {&dw1, &db1, &dgamma, &dbeta, &dw2, &dwf, &dbf};
    for (int i = 0; i < 7; ++i) {
      *slots[i] = p;
      *grad_slots[i] = g;
      p += sizes[i];
      g += sizes[i];
    }
    x = to_device(nonzero_floats(conv1.x_size(), 402), s);
    std::vector<std::int32_t> lab(8);
    for (int i = 0; i < 8; ++i) lab[static_cast<std::size_t>(i)] = i % 10;
    labels = to_device(lab, s);
    rm = to_device(std::vector<float>(16, 0.0f), s);
    rv = to_device(std::vector<float>(16, 1.0f), s);
    loss = poisoned<float>(1, s);
    loss_sum = Tensor::zeros({1}, DType::F64, Device::cuda(0), s);
  }

  void step(cuda::CudaHandles& h, cudaStream_t s, bool first) {
    auto f32 = [&](std::int64_t n) { return Tensor::empty({n}, DType::F32, Device::cuda(0), s); };
    Tensor a1 = f32(static_cast<std::int64_t>(conv1.y_size())), a2 = f32(a1.numel()), a3 = f32(a1.numel());
    Tensor mean = f32(16), invstd = f32(16);
    Tensor a4 = f32(pool.output_size()),
           idx = Tensor::empty({pool.output_size()}, DType::I32, Device::cuda(0), s);
    Tensor a5 = f32(static_cast<std::int64_t>(conv2.y_size())), a6 = f32(8 * 32), logits = f32(80),
           dlogits = f32(80);
    cuda::conv2d_forward_cudnn(h, s, conv1, x.data<float>(), w1, b1, a1.data<float>());
    cuda::batchnorm2d_forward_training(s, bn, a1.data<float>(), gamma, beta, a2.data<float>(),
                                       mean.data<float>(), invstd.data<float>(), rm.data<float>(),
                                       rv.data<float>());
    cuda::relu_forward(s, a2.data<float>(), a3.data<float>(), a3.numel());
    cuda::maxpool2d_forward(s, pool, a3.data<float>(), a4.data<float>(), idx.data<std::int32_t>());
    cuda::conv2d_forward_implicit_gemm(s, conv2, a4.data<float>(), w2, nullptr, a5.data<float>());
    cuda::global_avgpool_forward(s, 8, 32, 8, 8, a5.data<float>(), a6.data<float>());
    cuda::linear_forward(h, s, fc, a6.data<float>(), wf, bf, logits.data<float>());
    cuda::softmax_cross_entropy(s, logits.data<float>(), labels.data<std::int32_t>(), 8, 10, 0.1,
                                loss.data<float>(), dlogits.data<float>(), loss_sum.data<double>(), nullptr);
    Tensor d6 = f32(a6.numel()), d5 = f32(a5.numel()), d4 = f32(a4.numel()), d3 = f32(a3.numel()),
           d2 = f32(a2.numel()), d1 = f32(a1.numel());
    cuda::linear_backward(h, s, fc, a6.data<float>(), wf, dlogits.data<float>(), d6.data<float>(), dwf, dbf);
    cuda::global_avgpool_backward(s, 8, 32, 8, 8, d6.data<float>(), d5.data<float>());
    cuda::conv2d_backward_implicit_gemm(s, conv2, a4.data<float>(), w2, d5.data<float>(), d4.data<float>(),
                                        dw2, nullptr);
    cuda::maxpool2d_backward(s, pool, d4.data<float>(), idx.data<std::int32_t>(), d3.data<float>());
    cuda::relu_backward(s, a2.data<float>(), d3.data<float>(), d2.data<float>(), d2.numel());
    cuda::batchnorm2d_backward_training(s, bn, a1.data<float>(), gamma, mean.data<float>(),
                                        invstd.data<float>(), d2.data<float>(), d1.data<float>(), dgamma,
                                        dbeta);
    cuda::conv2d_backward_cudnn(h, s, conv1, x.data<float>(), w1, d1.data<float>(), nullptr, dw1, db1);
    // dw2 has no bias slot; its neighbour's grads are all written, so the flat grad buffer is complete.
    cuda::sgd_step(s, {.lr = 0.01, .momentum = 0.9, .weight_decay = 5e-4}, param_buf.data<float>(),
                   grad_buf.data<float>(), momentum_buf.data<float>(), params, first);
  }
};

TEST(CudaSteadyState, RepeatedTrainingStepsMakeNoCudaMalloc) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  cuda::CudaHandles handles(0, s);
  TinyNet net(s);
  net.step(handles, s, true);  // warm-up: plans, algorithms, workspaces, scratch all enter the cache
  net.step(handles, s, false);
  CUDA_CHECK(cudaStreamSynchronize(s));
  const AllocatorStats warm = device_allocator(0).stats();
  for (int i = 0; i < 5; ++i) net.step(handles, s, false);
  CUDA_CHECK(cudaStreamSynchronize(s));
  const AllocatorStats after = device_allocator(0).stats();
  EXPECT_EQ(after.driver_allocs, warm.driver_allocs) << "cudaMalloc was called in a steady-state step";
  EXPECT_EQ(after.driver_frees, warm.driver_frees);
  EXPECT_EQ(after.bytes_in_use, warm.bytes_in_use);
  // And the step computed something finite (a NaN here would mean an unwritten buffer was read).
  const auto loss = to_host<float>(net.loss, s);
  EXPECT_TRUE(std::isfinite(loss[0])) << loss[0];
  const auto params = to_host<float>(net.param_buf, s);
  for (float v : params) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace engine
