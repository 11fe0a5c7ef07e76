// Small dedicated cases for compute-sanitizer (scripts/gpu-check.sh, call 4): every kernel family, the cuDNN
// and cuBLAS calls, the loader and the caching allocator, each at the smallest size that exercises it, with
// no CPU reference and no subprocess, so memcheck, racecheck, synccheck and initcheck each finish in a minute
// or two. The correctness against the CPU is tests/gpu's; here each case still checks what it can cheaply
// (finite values, two runs bitwise equal, batches equal to the CPU loader's), so it fails without a sanitizer
// too.
//
//   ZooStep/*        one training step (forward, loss, backward, SGD, eval forward) of each zoo model at
//                    batch 2, with cuDNN and with the implicit-GEMM convolution: conv, BatchNorm, ReLU,
//                    max/avg pooling, dropout, residual add, linear (cuBLAS + bias), softmax cross-entropy,
//                    SGD; the shared-memory kernels racecheck and synccheck look at are all here
//   Loader.*         the staged (pinned buffers, copy stream, 2 workers) and the GPU-resident loader, with
//                    the augment kernel, one epoch over 19 images of 8x8 in batches of 4 (a partial last one)
//   Allocator.*      the caching allocator: blocks of several sizes reused on two streams, written then read

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda_check.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "data/loader.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/sgd.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/common/gpu.h"
#include "tests/cpu/layer_test_util.h"

namespace engine {
namespace {

using layers::ConvAlgorithm;

struct ZooCase {
  const char* name;
  int c, h, w;
  ConvAlgorithm conv;
};

// The smallest images each model accepts; resnet18 at 16x16 still has a 2x2 last stage.
const ZooCase kZoo[] = {
    {"vgg6", 3, 32, 32, ConvAlgorithm::Cudnn},     {"vgg6", 3, 32, 32, ConvAlgorithm::ImplicitGemm},
    {"cnn3", 3, 32, 32, ConvAlgorithm::Cudnn},     {"mnist_cnn", 1, 28, 28, ConvAlgorithm::Cudnn},
    {"resnet18", 3, 16, 16, ConvAlgorithm::Cudnn}, {"resnet18", 3, 16, 16, ConvAlgorithm::ImplicitGemm},
};

// The host values of one step: logits, parameters after SGD, eval logits.
std::vector<double> one_step(const ZooCase& z) {
  Stream stream(0);
  cuda::CudaHandles handles(0, stream.get());
  layers::ExecutionContext ctx;
  ctx.device = Device::cuda(0);
  ctx.stream = stream.get();
  ctx.handles = &handles;
  ctx.dropout_seed = 5;
  ctx.conv_algorithm = z.conv;
  layers::Model model = layers::build_model(z.name, z.c, 10, z.h, z.w);
  model.finalize(ctx, 1234);

  const Tensor x =
      layers::testing::random_tensor({2, z.c, z.h, z.w}, DType::F32, 11).to(ctx.device, ctx.stream);
  const Tensor labels = layers::testing::random_labels(2, 10, 12).to(ctx.device, ctx.stream);
  layers::SoftmaxCrossEntropy loss(0.1);
  const Tensor logits = model.forward(x, layers::Mode::Train);
  const Tensor l = loss.forward(model.context(), logits, labels);
  model.backward(loss.backward());
  const Tensor& p = model.flat_parameters();
  Tensor momentum = Tensor::zeros(p.shape(), DType::F32, ctx.device, ctx.stream);
  cuda::sgd_step(static_cast<cudaStream_t>(ctx.stream), {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4},
                 p.data<float>(), model.flat_gradients().data<float>(), momentum.data<float>(), p.numel(),
                 /*first_step=*/true);
  std::vector<double> out = layers::testing::host_values(l.to(Device::cpu(), ctx.stream));
  for (const Tensor& t : {logits, model.flat_parameters(), model.forward(x, layers::Mode::Eval)}) {
    const std::vector<double> v = layers::testing::host_values(t.to(Device::cpu(), ctx.stream));
    out.insert(out.end(), v.begin(), v.end());
  }
  stream.synchronize();
  return out;
}

class ZooStep : public ::testing::TestWithParam<ZooCase> {};

TEST_P(ZooStep, IsFiniteAndRepeatsBitwise) {
  SKIP_WITHOUT_GPU();
  const std::vector<double> first = one_step(GetParam()), second = one_step(GetParam());
  for (const double v : first) ASSERT_TRUE(std::isfinite(v)) << GetParam().name;
  EXPECT_EQ(first, second) << GetParam().name << ": two runs on the same inputs differ (a race?)";
}

INSTANTIATE_TEST_SUITE_P(SanitizerCases, ZooStep, ::testing::ValuesIn(kZoo),
                         [](const ::testing::TestParamInfo<ZooCase>& case_info) {
                           return std::string(case_info.param.name) +
                                  (case_info.param.conv == ConvAlgorithm::Cudnn ? "_cudnn"
                                                                                : "_implicit_gemm");
                         });

data::Dataset tiny_dataset() {
  data::Dataset d;
  d.channels = 3;
  d.height = 8;
  d.width = 8;
  d.class_names = {"0", "1", "2"};
  std::uint32_t seed = 3;
  d.images.resize(19 * 3 * 8 * 8);
  for (auto& b : d.images) b = static_cast<std::uint8_t>((seed = seed * 1664525u + 1013904223u) >> 24);
  for (int i = 0; i < 19; ++i) d.labels.push_back(i % 3);
  return d;
}

// One epoch's batches, on the host.
std::vector<Tensor> epoch_batches(const data::Dataset& d, const data::LoaderOptions& o) {
  data::Loader loader(d, data::DistributedSampler(19, 1, 0, true, 9), o);
  loader.start_epoch(1);
  std::vector<Tensor> out;
  for (data::Batch b; loader.next(b);) {
    out.push_back(b.images.to(Device::cpu(), o.stream));
    out.push_back(b.labels.to(Device::cpu(), o.stream));
  }
  return out;
}

TEST(SanitizerCases, LoaderStagedAndResidentGiveTheCpuBatches) {
  SKIP_WITHOUT_GPU();
  const data::Dataset d = tiny_dataset();
  data::LoaderOptions cpu;
  cpu.batch_size = 4;  // 19 images: 4 full batches and one of 3
  cpu.transform = data::TransformConfig::train({0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f}, /*seed=*/4);
  const std::vector<Tensor> want = epoch_batches(d, cpu);
  Stream stream(0);
  for (const bool resident : {false, true}) {
    data::LoaderOptions gpu = cpu;
    gpu.device = Device::cuda(0);
    gpu.stream = stream.get();
    gpu.gpu_resident = resident;
    gpu.num_workers = 2;
    const std::vector<Tensor> got = epoch_batches(d, gpu);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(got[k].nbytes(), want[k].nbytes());
      EXPECT_EQ(0, std::memcmp(got[k].raw_data(), want[k].raw_data(), want[k].nbytes()))
          << (resident ? "resident" : "staged") << " batch tensor " << k;
    }
  }
}

TEST(SanitizerCases, AllocatorReusesBlocksOnTwoStreams) {
  SKIP_WITHOUT_GPU();
  Stream a(0), b(0);
  for (int round = 0; round < 3; ++round) {
    for (const std::int64_t n : {1, 255, 4096, 1 << 20}) {
      for (Stream* s : {&a, &b}) {
        std::vector<float> values(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i)
          values[static_cast<std::size_t>(i)] = static_cast<float>(i + round);
        const Tensor host = Tensor::from_vector(values, {n});
        const Tensor device = host.to(Device::cuda(0), s->get());  // a block, written whole, then read
        const Tensor back = device.to(Device::cpu(), s->get());
        s->synchronize();
        ASSERT_EQ(0, std::memcmp(back.raw_data(), host.raw_data(), host.nbytes())) << n << " floats";
      }
    }
  }
}

}  // namespace
}  // namespace engine
