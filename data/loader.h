#pragma once
// Loader: the batches of one epoch for one rank, assembled ahead of the training loop.
//
//   Loader loader(train_set, DistributedSampler(n, world, rank, true, seed), options);
//   for (epoch ...) {
//     loader.start_epoch(epoch);
//     for (Batch b; loader.next(b);) { ... b.images (float32 [B, C, H, W]), b.labels (int32 [B]) ... }
//   }
//
// Three paths, chosen by the options:
//  - CPU (device = cpu): worker threads gather each batch's uint8 images and run the CPU transform straight
//    into the batch's float tensor.
//  - CUDA, staged (device = cuda:i): worker threads gather uint8 images, sample ids and labels into a ring of
//    pinned buffers and copy each to the GPU on the loader's copy stream; next() makes the compute stream
//    wait on the copy's event and launches the augment kernel there. The host work overlaps the GPU's.
//  - CUDA, GPU-resident (gpu_resident = true): the whole uint8 dataset lives on the GPU (CIFAR-10: 150 MB).
//    start_epoch() copies the rank's index list to the GPU once; next() is one kernel launch that gathers,
//    augments and normalizes the batch. No host work per step beyond the launch, no worker threads.
// Every path gives the same batches, bit for bit (the draws are keyed by dataset index:
// data/augment_params.h).
//
// Tensors handed out belong to the caller. On CUDA they come from the caching allocator on the compute
// stream and are ready in that stream's order, so steady-state steps make no cudaMalloc. The loader's own
// staging buffers (pinned and device) are allocated once and reused; an event per slot orders each reuse
// after the kernel that read it.
//
// Errors in worker threads reach the consumer as engine::Error from next(). The destructor (and
// start_epoch() on an unfinished epoch) stops and joins the workers without waiting for the epoch to end.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "data/dataset.h"
#include "data/distributed_sampler.h"
#include "data/transforms.h"

namespace engine::data {

struct Batch {
  Tensor images;           // float32 [B, C, H, W] on the loader's device
  Tensor labels;           // int32 [B] on the loader's device
  std::int64_t index = 0;  // the batch's number within the epoch
  std::int64_t size() const { return labels.defined() ? labels.dim(0) : 0; }
};

struct LoaderOptions {
  std::int64_t batch_size = 128;
  bool drop_last = false;  // true: only full batches (training); false: a last partial batch (evaluation)
  int prefetch_depth = 2;  // batches assembled ahead of the consumer, each in its own reused buffer
  int num_workers = 1;     // host threads assembling batches (CPU and staged CUDA paths)
  Device device = Device::cpu();
  bool gpu_resident = false;  // CUDA only: keep the uint8 dataset on the GPU and gather there
  void* stream = nullptr;     // CUDA: the compute stream (a cudaStream_t) the batches are produced on
  TransformConfig transform;
  // The memory order of Batch::images (core/layout.h): NHWC gives channels-last batches, what a model in the
  // NHWC layout takes as they are (the CUDA augment kernel writes them so; the CPU path transposes each
  // image on its worker thread). The values are the NCHW batch's either way.
  Layout image_layout = Layout::NCHW;
  // CUDA, GPU-resident only: device addresses the augment kernel reads the epoch and the batch's first entry
  // in the epoch's index list from, instead of the values next() passes (a CUDA graph's step state,
  // apps/train/step_state.h: a replayed step finds the next batch there). Whoever sets them writes the right
  // values before each batch's kernel runs. Null: the values next() knows.
  const std::uint64_t* device_epoch = nullptr;
  const std::int64_t* device_batch_offset = nullptr;
  // Called on the thread that assembles batch k, before it does: for instrumentation and for tests that
  // inject delays or failures. Exceptions thrown here reach the consumer like any other worker failure.
  std::function<void(std::int64_t batch)> before_batch;
};

class LoaderBackend;  // data/loader_backend.h
class Prefetcher;     // data/prefetcher.h

class Loader {
 public:
  // `dataset` must outlive the loader. Throws engine::Error for inconsistent options: a sampler over another
  // dataset size, batch_size < 1, prefetch_depth < 1, num_workers < 1, gpu_resident on the CPU, a CUDA
  // device in a CPU-only build or one that does not exist, mean/std for another channel count.
  Loader(const Dataset& dataset, DistributedSampler sampler, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Starts `epoch` (the sampler's permutation and the augmentation draws both follow it). An unfinished
  // previous epoch is abandoned. `position` > 0 resumes the epoch mid-way (DistributedSampler::set_position:
  // entries of the epoch's list already consumed by every rank); batches are then numbered from 0 again.
  void start_epoch(std::uint64_t epoch, std::int64_t position = 0);
  // The next batch of the epoch, or false after the last. Starts the sampler's current epoch if
  // start_epoch() was not called. Throws engine::Error when assembling the batch failed.
  bool next(Batch& batch);

  std::int64_t num_batches() const;  // in an epoch (the same for every epoch; fewer after a position)
  std::uint64_t epoch() const { return sampler_.epoch(); }
  const DistributedSampler& sampler() const { return sampler_; }
  const LoaderOptions& options() const { return options_; }
  const Transform& transform() const { return transform_; }

 private:
  std::int64_t batch_count(std::int64_t batch) const;  // samples in batch `batch`
  void assemble(std::int64_t batch, int slot);         // on a worker thread

  const Dataset& dataset_;
  DistributedSampler sampler_;
  LoaderOptions options_;
  Transform transform_;
  std::unique_ptr<LoaderBackend> backend_;
  std::vector<std::int64_t> indices_;  // this rank's indices for the current epoch
  bool started_ = false;
  std::int64_t next_batch_ = 0;
  std::unique_ptr<Prefetcher> prefetcher_;  // declared last: destroyed (workers joined) first
};

}  // namespace engine::data
