// loader_bench: images per second through the data loader with the CIFAR-10 training recipe (random crop 32
// with padding 4, horizontal flip, per-channel normalize), per path:
//   transform      the CPU transform alone, one thread (the inner loop's ceiling)
//   cpu            the CPU Loader with 1..N worker threads, prefetch depth 2 (batches handed to a consumer
//                  that does nothing with them)
//   cuda-staged    the CUDA Loader through pinned buffers and a copy stream (GPU machines only)
//   cuda-resident  the CUDA Loader with the uint8 dataset on the GPU (GPU machines only)
// Data: CIFAR-shaped random uint8 images (3x32x32). The work does not depend on the pixel values, so the real
// files are not needed; CIFAR10_DIR is not read.
//
// Each measurement runs one warm-up epoch, then times whole epochs (CUDA: until the stream is drained).
//   loader_bench                 full run (50,000 images, 3 timed epochs)
//   loader_bench --smoke         seconds: 2,000 images, 1 timed epoch, and a check that batches arrive whole
//   loader_bench --json out.json also writes the results as JSON
//   loader_bench --folder DIR [--make N] [--image-size 224] [--no-dct-scaling]
//                                a folder of JPEGs read from disk (data/disk_images.h: RandomResizedCrop +
//                                flip + normalize, decoded by the workers); --make writes N synthetic
//                                256-500 px photos there first (benchmarks/common/photo_folder.h). Beside
//                                torchvision: benchmarks/pytorch/imagefolder_bench.py, same folder and flags.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "benchmarks/common/photo_folder.h"
#include "benchmarks/common/random_dataset.h"
#include "core/device.h"
#include "core/error.h"
#include "data/disk_images.h"
#include "data/file_list.h"
#include "data/loader.h"

#if ENGINE_HAVE_CUDA
#include "core/stream.h"
#endif

namespace {

using engine::data::Batch;
using engine::data::Dataset;
using engine::data::DistributedSampler;
using engine::data::Loader;
using engine::data::LoaderOptions;
using engine::data::Transform;
using engine::data::TransformConfig;
using Clock = std::chrono::steady_clock;

TransformConfig cifar_train_recipe() {
  return TransformConfig::train({0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}, /*seed=*/0);
}

struct Result {
  std::string path;
  int workers = 0;
  double images_per_second = 0;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One warm-up epoch, then `epochs` timed ones; `drain` waits for queued device work.
template <typename Drain>
double time_loader(Loader& loader, int epochs, std::int64_t expect_images, Drain drain) {
  auto run = [&](std::uint64_t epoch) {
    loader.start_epoch(epoch);
    std::int64_t images = 0;
    for (Batch b; loader.next(b);) images += b.size();
    ENGINE_CHECK(images == expect_images, "loader_bench: epoch {} gave {} images, expected {}", epoch, images,
                 expect_images);
  };
  run(0);
  drain();
  const auto start = Clock::now();
  for (int e = 1; e <= epochs; ++e) run(static_cast<std::uint64_t>(e));
  drain();
  return static_cast<double>(expect_images) * epochs / seconds_since(start);
}

double time_transform_alone(const Dataset& d, int epochs) {
  const Transform t(cifar_train_recipe());
  std::vector<float> out(static_cast<std::size_t>(d.image_bytes()));
  const auto start = Clock::now();
  for (int e = 0; e < epochs; ++e) {
    for (std::int64_t i = 0; i < d.size(); ++i) {
      t.apply(d.image(i), d.channels, d.height, d.width, i, static_cast<std::uint64_t>(e), out.data());
    }
  }
  const double s = seconds_since(start);
  volatile float sink = out[0];  // keep the work observable
  (void)sink;
  return static_cast<double>(d.size()) * epochs / s;
}

std::vector<int> worker_counts_up_to(int max_workers) {
  std::vector<int> counts;  // 1, 2, 4, ... and max_workers itself
  for (int w = 1; w < max_workers; w *= 2) counts.push_back(w);
  counts.push_back(max_workers);
  return counts;
}

// The folder mode: ImageNet's training recipe at `size` from disk, 1..max_workers workers.
int run_folder(const std::string& root, std::int64_t make, std::int64_t size, bool dct, std::int64_t batch,
               int epochs, int max_workers) {
  if (make > 0) engine::bench::make_photo_folder(root, make);
  engine::data::DiskImageOptions o;
  o.image_size = size;
  o.random_resized_crop = true;
  o.dct_scaling = dct;
  const auto start = Clock::now();
  const Dataset d = engine::data::disk_image_dataset(engine::data::index_image_folder(root), o);
  std::printf(
      "loader_bench: %lld images from %s (indexed in %.2f s), batch %lld, RandomResizedCrop(%lld) + "
      "flip + normalize, DCT scaling %s\n",
      static_cast<long long>(d.size()), root.c_str(), seconds_since(start), static_cast<long long>(batch),
      static_cast<long long>(size), dct ? "on" : "off");
  for (int w : worker_counts_up_to(max_workers)) {
    LoaderOptions lo;
    lo.batch_size = batch;
    lo.drop_last = true;
    lo.num_workers = w;
    lo.transform = TransformConfig::eval({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f});
    lo.transform.random_flip = true;
    Loader loader(d, DistributedSampler(d.size(), 1, 0, true, 0), lo);
    const double ips = time_loader(loader, epochs, loader.num_batches() * batch, [] {});
    std::printf("  %-14s %2d worker(s) %10.1f images/s  %8.1f per worker\n", "folder", w, ips, ips / w);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Data loader throughput (images/s) with random crop + flip + normalize"};
  bool smoke = false;
  std::int64_t images = 50000, batch = 256;
  int epochs = 3, max_workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string json_path, folder;
  std::int64_t make = 0, image_size = 224;
  bool no_dct = false;
  app.add_flag("--smoke", smoke, "a seconds-long CPU run for CI");
  app.add_option("--images", images, "dataset size")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "batch size")->check(CLI::PositiveNumber);
  app.add_option("--epochs", epochs, "timed epochs")->check(CLI::PositiveNumber);
  app.add_option("--max-workers", max_workers, "CPU loader: time 1, 2, ... up to this many workers")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "also write the results to this JSON file");
  app.add_option("--folder", folder, "time the on-disk loader on this ImageFolder of JPEGs instead");
  app.add_option("--make", make, "--folder: first write this many synthetic photos there");
  app.add_option("--image-size", image_size, "--folder: RandomResizedCrop's size")
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-dct-scaling", no_dct, "--folder: decode every JPEG whole (Pillow's bytes)");
  CLI11_PARSE(app, argc, argv);
  if (!folder.empty()) {
    try {
      return run_folder(folder, make, image_size, !no_dct, batch, epochs, max_workers);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "loader_bench: %s\n", e.what());
      return 1;
    }
  }
  if (smoke) {
    images = 2000;
    epochs = 1;
    max_workers = std::min(max_workers, 2);
  }

  try {
    const Dataset d = engine::bench::random_dataset(images, 3, 32, 32);
    std::vector<Result> results;
    std::printf("loader_bench: %lld random 3x32x32 images, batch %lld, crop 32 pad 4 + flip + normalize\n",
                static_cast<long long>(images), static_cast<long long>(batch));

    const double alone = time_transform_alone(d, epochs);
    results.push_back({"transform", 1, alone});
    std::printf("  %-14s %2d thread    %12.0f images/s\n", "transform", 1, alone);

    for (int w : worker_counts_up_to(max_workers)) {
      LoaderOptions o;
      o.batch_size = batch;
      o.drop_last = true;
      o.num_workers = w;
      o.transform = cifar_train_recipe();
      Loader loader(d, DistributedSampler(images, 1, 0, true, 0), o);
      const double ips = time_loader(loader, epochs, loader.num_batches() * batch, [] {});
      results.push_back({"cpu", w, ips});
      std::printf("  %-14s %2d worker(s) %12.0f images/s\n", "cpu", w, ips);
    }

#if ENGINE_HAVE_CUDA
    if (!smoke && engine::device_count() > 0) {
      engine::set_device(0);
      engine::Stream stream(0);
      for (bool resident : {false, true}) {
        LoaderOptions o;
        o.batch_size = batch;
        o.drop_last = true;
        o.num_workers = 2;
        o.device = engine::Device::cuda(0);
        o.stream = stream.get();
        o.gpu_resident = resident;
        o.transform = cifar_train_recipe();
        Loader loader(d, DistributedSampler(images, 1, 0, true, 0), o);
        const double ips =
            time_loader(loader, epochs, loader.num_batches() * batch, [&] { stream.synchronize(); });
        const char* name = resident ? "cuda-resident" : "cuda-staged";
        results.push_back({name, resident ? 0 : 2, ips});
        std::printf("  %-14s %2d worker(s) %12.0f images/s\n", name, resident ? 0 : 2, ips);
      }
    } else {
      std::printf("  cuda paths: skipped (%s)\n", smoke ? "--smoke" : "no CUDA device visible");
    }
#else
    std::printf("  cuda paths: skipped (CPU-only build)\n");
#endif

    if (!json_path.empty()) {
      std::ofstream f(json_path);
      ENGINE_CHECK(f.good(), "loader_bench: cannot write {}", json_path);
      f << "{\"images\": " << images << ", \"batch\": " << batch << ", \"epochs\": " << epochs
        << ", \"results\": [";
      for (std::size_t i = 0; i < results.size(); ++i) {
        f << (i ? ", " : "") << "{\"path\": \"" << results[i].path
          << "\", \"workers\": " << results[i].workers
          << ", \"images_per_second\": " << results[i].images_per_second << "}";
      }
      f << "]}\n";
      ENGINE_CHECK(f.good(), "loader_bench: writing {} failed", json_path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loader_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
