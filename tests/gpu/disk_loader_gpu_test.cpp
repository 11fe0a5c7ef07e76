// A folder dataset read from disk (data/disk_images.h) through the staged CUDA loader: the host workers
// decode into the pinned buffers, the copy stream uploads, the augment kernel flips and normalizes; the
// batches equal the CPU loader's bit for bit. The GPU-resident path refuses such a dataset.

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/stream.h"
#include "data/disk_images.h"
#include "data/file_list.h"
#include "data/loader.h"
#include "tests/common/gpu.h"
#include "tests/common/image_trees.h"
#include "tests/common/scratch_dirs.h"

namespace engine::data {
namespace {

std::vector<Batch> host_batches(Loader& loader, std::uint64_t epoch, cudaStream_t stream) {
  std::vector<Batch> out;
  loader.start_epoch(epoch);
  for (Batch b; loader.next(b);) {
    Batch host;
    host.images = b.images.to(Device::cpu(), stream);
    host.labels = b.labels.to(Device::cpu(), stream);
    out.push_back(host);
  }
  return out;
}

TEST(DiskLoaderGpu, StagedBatchesFromDiskEqualTheCpus) {
  SKIP_WITHOUT_GPU();
  const std::string root = engine::testing::scratch_path("cnn_engine_", "disk_loader_gpu").string();
  engine::testing::make_image_tree(root, {"a", "b", "c"}, 7);
  DiskImageOptions o;
  o.image_size = 48;
  o.random_resized_crop = true;
  o.seed = 3;
  const Dataset d = disk_image_dataset(index_image_folder(root), o);
  Stream stream(0);
  LoaderOptions cpu_options;
  cpu_options.batch_size = 5;
  cpu_options.num_workers = 2;
  cpu_options.transform = TransformConfig::eval({0.5f, 0.4f, 0.3f}, {0.2f, 0.25f, 0.3f});
  cpu_options.transform.random_flip = true;
  cpu_options.transform.seed = 3;
  LoaderOptions gpu_options = cpu_options;
  gpu_options.device = Device::cuda(0);
  gpu_options.stream = stream.get();
  const DistributedSampler sampler(d.size(), 1, 0, true, 3);
  Loader cpu(d, sampler, cpu_options), gpu(d, sampler, gpu_options);
  for (std::uint64_t epoch : {0u, 1u}) {
    const std::vector<Batch> want = host_batches(cpu, epoch, nullptr),
                             got = host_batches(gpu, epoch, stream.get());
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(got[k].images.shape(), want[k].images.shape());
      EXPECT_EQ(0, std::memcmp(got[k].images.raw_data(), want[k].images.raw_data(), want[k].images.nbytes()))
          << "epoch " << epoch << " batch " << k;
      EXPECT_EQ(0, std::memcmp(got[k].labels.raw_data(), want[k].labels.raw_data(), want[k].labels.nbytes()));
    }
  }
  gpu_options.gpu_resident = true;
  try {
    Loader resident(d, sampler, gpu_options);
    ADD_FAILURE() << "the GPU-resident loader took an on-disk dataset";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("read from disk"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace engine::data
