#pragma once
// The device-specific half of the Loader (data/loader.h); internal to data/.
//
// A backend either prefetches (fill() runs on worker threads into slot buffers, take() on the consumer
// thread turns a filled slot into a Batch) or produces each batch on the consumer thread (take() with
// slot -1: the GPU-resident path, whose "assembly" is one kernel launch).

#include <cstdint>
#include <memory>
#include <span>

#include "core/device.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/transforms.h"

namespace engine::data {

class LoaderBackend {
 public:
  virtual ~LoaderBackend() = default;
  virtual bool prefetches() const = 0;
  // On the consumer thread before an epoch's first batch, with the rank's whole index list.
  virtual void begin_epoch(std::span<const std::int64_t> indices, std::uint64_t epoch) {
    (void)indices;
    (void)epoch;
  }
  // Once on each worker thread before its first fill.
  virtual void worker_init() {}
  // On a worker thread: assembles the samples `ids` into `slot`.
  virtual void fill(int slot, std::span<const std::int64_t> ids, std::uint64_t epoch) {
    (void)slot;
    (void)ids;
    (void)epoch;
  }
  // On the consumer thread: the batch of samples `ids`, which start at position `offset` of the epoch's list.
  virtual Batch take(int slot, std::int64_t offset, std::span<const std::int64_t> ids,
                     std::uint64_t epoch) = 0;
};

// `layout`: LoaderOptions::image_layout, the memory order of the batches' images.
std::unique_ptr<LoaderBackend> make_cpu_backend(const Dataset& dataset, const Transform& transform, int slots,
                                                Layout layout);

#if ENGINE_HAVE_CUDA
// data/loader_cuda.cpp
std::unique_ptr<LoaderBackend> make_cuda_staged_backend(const Dataset& dataset, const Transform& transform,
                                                        int slots, std::int64_t max_batch, Device device,
                                                        void* stream, Layout layout);
std::unique_ptr<LoaderBackend> make_cuda_resident_backend(const Dataset& dataset, const Transform& transform,
                                                          std::int64_t samples_per_epoch, Device device,
                                                          void* stream, const std::uint64_t* device_epoch,
                                                          const std::int64_t* device_batch_offset,
                                                          Layout layout);
#endif

}  // namespace engine::data
