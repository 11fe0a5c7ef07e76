// The CUDA data path against the CPU path: the augment kernel bit for bit (odd batch and image sizes; NCHW
// and NHWC output), the staged loader (pinned buffers, copy stream, events) and the GPU-resident loader batch
// for batch, and no cudaMalloc in steady state.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "core/allocator.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "data/loader.h"
#include "data/transforms.h"
#include "tests/common/gpu.h"

namespace engine::data {
namespace {

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>((seed = seed * 1664525u + 1013904223u) >> 24);
  return v;
}

Dataset random_dataset(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  Dataset d;
  d.channels = c;
  d.height = h;
  d.width = w;
  d.class_names = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  d.images = random_bytes(static_cast<std::size_t>(n * c * h * w), 99);
  for (std::int64_t i = 0; i < n; ++i) d.labels.push_back(static_cast<std::int32_t>((i * 7) % 10));
  return d;
}

void expect_bitwise_equal(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(gpu.layout(), cpu.layout()) << what;
  const Tensor host = gpu.to(Device::cpu());
  EXPECT_EQ(0, std::memcmp(host.raw_data(), cpu.raw_data(), cpu.nbytes())) << what << " differs";
}

TEST(TransformsGpu, KernelEqualsCpuBitwise) {
  SKIP_WITHOUT_GPU();
  const struct {
    std::int64_t b, c, h, w;
    std::int32_t pad;
  } shapes[] = {{37, 3, 32, 32, 4}, {37, 3, 7, 9, 4}, {5, 1, 28, 28, 2}, {3, 2, 3, 5, 6}};
  Stream stream(0);
  for (const auto& s : shapes) {
    std::vector<float> mean, std_dev;
    for (std::int64_t c = 0; c < s.c; ++c) {
      mean.push_back(0.45f + 0.01f * static_cast<float>(c));
      std_dev.push_back(0.25f - 0.01f * static_cast<float>(c));
    }
    // airbench94's flip-translate too: reflection padding (at most min(h, w) - 1) and the alternating flip.
    const std::int32_t reflect_pad =
        std::min<std::int32_t>(s.pad, static_cast<std::int32_t>(std::min(s.h, s.w)) - 1);
    for (const Transform& t : {Transform(TransformConfig::train(mean, std_dev, /*seed=*/31, s.pad)),
                               Transform(TransformConfig::flip_translate(mean, std_dev, 31, reflect_pad))}) {
      const Tensor images = Tensor::from_vector(
          random_bytes(static_cast<std::size_t>(s.b * s.c * s.h * s.w), 5), {s.b, s.c, s.h, s.w});
      std::vector<std::int32_t> id_values;
      for (std::int64_t i = 0; i < s.b; ++i) id_values.push_back(static_cast<std::int32_t>(1000 + 13 * i));
      const Tensor ids = Tensor::from_vector(id_values, {s.b});
      for (std::uint64_t epoch : {0u, 7u, 8u}) {
        Tensor cpu_out = Tensor::empty(images.shape(), DType::F32);
        t.apply_batch(images, ids, epoch, cpu_out);
        const Tensor gpu_images = images.to(Device::cuda(0), stream.get());
        const Tensor gpu_ids = ids.to(Device::cuda(0), stream.get());
        Tensor gpu_out = Tensor::empty(images.shape(), DType::F32, Device::cuda(0), stream.get());
        gpu_out.fill_bytes(0xFF, stream.get());  // poison: NaNs wherever the kernel fails to write
        t.apply_batch(gpu_images, gpu_ids, epoch, gpu_out, stream.get());
        stream.synchronize();
        expect_bitwise_equal(
            gpu_out, cpu_out,
            "augmented batch " + images.str() + (t.config().reflect_pad ? " (flip-translate)" : ""));
        // NHWC output (channels last, for an NHWC model): the CPU's NHWC batch (each image transposed after
        // the transform) bit for bit.
        Tensor cpu_nhwc = Tensor::empty(images.shape(), DType::F32, Device::cpu(), nullptr, Layout::NHWC);
        t.apply_batch(images, ids, epoch, cpu_nhwc);
        Tensor gpu_nhwc =
            Tensor::empty(images.shape(), DType::F32, Device::cuda(0), stream.get(), Layout::NHWC);
        gpu_nhwc.fill_bytes(0xFF, stream.get());
        t.apply_batch(gpu_images, gpu_ids, epoch, gpu_nhwc, stream.get());
        stream.synchronize();
        expect_bitwise_equal(gpu_nhwc, cpu_nhwc, "augmented NHWC batch " + images.str());
      }
    }
  }
}

std::vector<Batch> collect(Loader& loader, std::uint64_t epoch, cudaStream_t stream) {
  std::vector<Batch> out;
  loader.start_epoch(epoch);
  for (Batch b; loader.next(b);) {
    if (b.images.is_cuda()) {
      Batch host;
      host.images = b.images.to(Device::cpu(), stream);
      host.labels = b.labels.to(Device::cpu(), stream);
      host.index = b.index;
      out.push_back(host);
    } else {
      out.push_back(b);
    }
  }
  return out;
}

void expect_same_batches(LoaderOptions gpu_options, const std::string& what) {
  const Dataset d = random_dataset(301, 3, 32, 32);
  Stream stream(0);
  LoaderOptions cpu_options = gpu_options;
  cpu_options.device = Device::cpu();
  cpu_options.gpu_resident = false;
  gpu_options.device = Device::cuda(0);
  gpu_options.stream = stream.get();
  for (int rank : {0, 1}) {
    const DistributedSampler sampler(301, 2, rank, true, 12);
    Loader cpu(d, sampler, cpu_options), gpu(d, sampler, gpu_options);
    for (std::uint64_t epoch : {0u, 1u}) {
      const std::vector<Batch> want = collect(cpu, epoch, nullptr), got = collect(gpu, epoch, stream.get());
      ASSERT_EQ(got.size(), want.size()) << what;
      for (std::size_t k = 0; k < want.size(); ++k) {
        const std::string where = what + " rank " + std::to_string(rank) + " epoch " + std::to_string(epoch) +
                                  " batch " + std::to_string(k);
        expect_bitwise_equal(got[k].images, want[k].images, where + " images");
        expect_bitwise_equal(got[k].labels, want[k].labels, where + " labels");
      }
    }
  }
}

LoaderOptions train_options() {
  LoaderOptions o;
  o.batch_size = 37;  // 151 samples per rank: 4 full batches and one of 3
  o.transform = TransformConfig::train({0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}, /*seed=*/4);
  return o;
}

TEST(LoaderGpu, StagedEqualsCpu) {
  SKIP_WITHOUT_GPU();
  expect_same_batches(train_options(), "staged");
  LoaderOptions o = train_options();
  o.num_workers = 2;
  o.prefetch_depth = 3;
  expect_same_batches(o, "staged, 2 workers, depth 3");
}

TEST(LoaderGpu, ResidentEqualsCpu) {
  SKIP_WITHOUT_GPU();
  LoaderOptions o = train_options();
  o.gpu_resident = true;
  expect_same_batches(o, "resident");
  o.drop_last = true;
  expect_same_batches(o, "resident, drop_last");
}

TEST(LoaderGpu, NhwcBatchesEqualTheCpus) {
  SKIP_WITHOUT_GPU();
  LoaderOptions o = train_options();
  o.image_layout = Layout::NHWC;
  expect_same_batches(o, "staged NHWC");
  o.gpu_resident = true;
  expect_same_batches(o, "resident NHWC");
}

TEST(LoaderGpu, SteadyStateMakesNoCudaMalloc) {
  SKIP_WITHOUT_GPU();
  const Dataset d = random_dataset(500, 3, 32, 32);
  Stream stream(0);
  for (bool resident : {false, true}) {
    LoaderOptions o = train_options();
    o.batch_size = 64;  // 500 samples: 7 full batches and one of 52
    o.device = Device::cuda(0);
    o.stream = stream.get();
    o.gpu_resident = resident;
    Loader loader(d, DistributedSampler(500, 1, 0, true, 1), o);
    auto run = [&](std::uint64_t epoch) {
      loader.start_epoch(epoch);
      for (Batch b; loader.next(b);) {
      }
    };
    run(0);  // warm-up: the allocator caches every size the epoch uses
    run(1);
    stream.synchronize();
    const std::size_t before = device_allocator(0).stats().driver_allocs;
    const std::size_t pinned_before = pinned_allocator().stats().driver_allocs;
    for (std::uint64_t epoch = 2; epoch < 5; ++epoch) run(epoch);
    stream.synchronize();
    EXPECT_EQ(device_allocator(0).stats().driver_allocs, before) << (resident ? "resident" : "staged");
    EXPECT_EQ(pinned_allocator().stats().driver_allocs, pinned_before) << (resident ? "resident" : "staged");
  }
}

TEST(LoaderGpu, DefaultStreamWorks) {
  SKIP_WITHOUT_GPU();
  LoaderOptions o = train_options();
  o.stream = nullptr;  // the legacy default stream
  const Dataset d = random_dataset(80, 3, 32, 32);
  LoaderOptions g = o;
  g.device = Device::cuda(0);
  Loader cpu(d, DistributedSampler(80, 1, 0), o), gpu(d, DistributedSampler(80, 1, 0), g);
  const std::vector<Batch> want = collect(cpu, 0, nullptr), got = collect(gpu, 0, nullptr);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k)
    expect_bitwise_equal(got[k].images, want[k].images, "default stream");
}

}  // namespace
}  // namespace engine::data
