// The Loader's CUDA paths (data/loader.h): staged through pinned memory, and GPU-resident. Empty in a
// CPU-only build (ENGINE_HAVE_CUDA is always defined, 0 or 1, by engine_core).
#include "data/loader_backend.h"

#if ENGINE_HAVE_CUDA

#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/cuda_check.h"
#include "core/device_guard.h"
#include "core/error.h"
#include "core/stream.h"
#include "data/cuda/transforms.h"

namespace engine::data {
namespace {

cuda::AugmentBatchArgs kernel_args(const Dataset& dataset, const Transform& transform, std::uint64_t epoch,
                                   Layout layout) {
  ENGINE_CHECK(dataset.channels <= cuda::kMaxChannels, "Loader: {} channels; the CUDA path handles up to {}",
               dataset.channels, cuda::kMaxChannels);
  cuda::AugmentBatchArgs a;
  a.channels = static_cast<std::int32_t>(dataset.channels);
  a.height = static_cast<std::int32_t>(dataset.height);
  a.width = static_cast<std::int32_t>(dataset.width);
  a.spec = transform.spec();
  a.epoch = epoch;
  a.out_layout = layout;
  for (std::int64_t c = 0; c < dataset.channels; ++c) {
    a.mean[c] = transform.mean(c);
    a.std_dev[c] = transform.std_dev(c);
  }
  return a;
}

// Fresh output tensors from the caching allocator on the compute stream (cache hits after the first epoch).
void allocate_outputs(const Dataset& dataset, std::int64_t n, Device device, cudaStream_t stream,
                      Layout layout, Batch& batch) {
  batch.images =
      Tensor::empty({n, dataset.channels, dataset.height, dataset.width}, DType::F32, device, stream, layout);
  batch.labels = Tensor::empty({n}, DType::I32, device, stream);
}

// Worker threads gather into a ring of pinned buffers; each buffer goes to its device twin with one copy on
// the copy stream. A slot's layout, in both: sample ids int32 [max_batch], labels int32 [max_batch], then
// the uint8 images [n, C, H, W].
class StagedBackend final : public LoaderBackend {
 public:
  StagedBackend(const Dataset& dataset, const Transform& transform, int slots, std::int64_t max_batch,
                Device device, void* stream, Layout layout)
      : dataset_(dataset),
        transform_(transform),
        layout_(layout),
        max_batch_(max_batch),
        device_(device),
        compute_(static_cast<cudaStream_t>(stream)),
        copy_stream_(device.index) {
    const std::int64_t bytes = header_bytes() + max_batch * dataset.image_bytes();
    DeviceGuard scope(device_.index);
    for (int s = 0; s < slots; ++s) {
      Slot slot;  // its events are created here, on the loader's device
      slot.pinned = Tensor::empty_pinned({bytes}, DType::U8);
      slot.device = Tensor::empty({bytes}, DType::U8, device_, copy_stream_.get());
      slots_.push_back(std::move(slot));
    }
  }

  ~StagedBackend() override {
    // Nothing may still read or write the buffers when they go back to their allocators.
    for (Slot& s : slots_) {
      try {
        s.copied.synchronize();
        s.consumed.synchronize();
      } catch (...) {  // a destructor must not throw; the context is already broken
      }
    }
  }

  bool prefetches() const override { return true; }

  void worker_init() override { CUDA_CHECK(cudaSetDevice(device_.index)); }

  void fill(int slot_index, std::span<const std::int64_t> ids, std::uint64_t epoch) override {
    Slot& s = slots_[static_cast<std::size_t>(slot_index)];
    s.copied.synchronize();  // the previous copy out of this pinned buffer has finished
    auto* base = s.pinned.data<std::uint8_t>();
    auto* sample_ids = reinterpret_cast<std::int32_t*>(base);
    auto* labels = reinterpret_cast<std::int32_t*>(base + 4 * max_batch_);
    std::uint8_t* images = base + header_bytes();
    const std::int64_t chw = dataset_.image_bytes();
    const auto n = static_cast<std::int64_t>(ids.size());
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t id = ids[static_cast<std::size_t>(i)];
      ENGINE_CHECK(id >= 0 && id < dataset_.size(),
                   "Loader: sample index {} outside the dataset of {} images", id, dataset_.size());
      sample_ids[i] = static_cast<std::int32_t>(id);
      labels[i] = read_sample(dataset_, id, epoch, images + i * chw);  // from memory, or decoded from disk
    }
    s.consumed.wait_on(copy_stream_.get());  // the kernel that read the device buffer last time is done
    const auto bytes = static_cast<std::size_t>(header_bytes() + n * chw);
    CUDA_CHECK(cudaMemcpyAsync(s.device.raw_data(), base, bytes, cudaMemcpyHostToDevice, copy_stream_.get()));
    s.copied.record(copy_stream_.get());
  }

  Batch take(int slot_index, std::int64_t, std::span<const std::int64_t> ids, std::uint64_t epoch) override {
    DeviceGuard scope(device_.index);
    Slot& s = slots_[static_cast<std::size_t>(slot_index)];
    const auto n = static_cast<std::int64_t>(ids.size());
    Batch batch;
    allocate_outputs(dataset_, n, device_, compute_, layout_, batch);
    s.copied.wait_on(compute_);  // the kernel reads what the copy stream wrote
    cuda::AugmentBatchArgs a = kernel_args(dataset_, transform_, epoch, layout_);
    auto* base = s.device.data<std::uint8_t>();
    a.sample_ids = reinterpret_cast<const std::int32_t*>(base);
    a.labels = reinterpret_cast<const std::int32_t*>(base + 4 * max_batch_);
    a.images = base + header_bytes();
    a.batch = n;
    a.out = batch.images.data<float>();
    a.out_labels = batch.labels.data<std::int32_t>();
    cuda::augment_normalize(a, compute_);
    s.consumed.record(compute_);
    return batch;
  }

 private:
  struct Slot {
    Tensor pinned;
    Tensor device;
    Event copied;    // recorded on the copy stream after the slot's copy
    Event consumed;  // recorded on the compute stream after the kernel that read the slot
  };

  std::int64_t header_bytes() const { return 8 * max_batch_; }

  const Dataset& dataset_;
  const Transform& transform_;
  Layout layout_;  // of the batches' images
  std::int64_t max_batch_;
  Device device_;
  cudaStream_t compute_;
  Stream copy_stream_;
  std::vector<Slot> slots_;
};

// The whole uint8 dataset and its labels on the GPU; the epoch's index list is copied once per epoch, and a
// batch is one kernel launch over a slice of it.
class ResidentBackend final : public LoaderBackend {
 public:
  ResidentBackend(const Dataset& dataset, const Transform& transform, std::int64_t samples_per_epoch,
                  Device device, void* stream, const std::uint64_t* device_epoch,
                  const std::int64_t* device_batch_offset, Layout layout)
      : dataset_(dataset),
        transform_(transform),
        layout_(layout),
        device_(device),
        compute_(static_cast<cudaStream_t>(stream)),
        device_epoch_(device_epoch),
        device_batch_offset_(device_batch_offset) {
    ENGINE_CHECK((device_epoch == nullptr) == (device_batch_offset == nullptr),
                 "Loader: the device epoch and batch offset come together (both set or neither)");
    DeviceGuard scope(device_.index);
    images_ = Tensor::empty({dataset.size(), dataset.channels, dataset.height, dataset.width}, DType::U8,
                            device_, compute_);
    labels_ = Tensor::empty({dataset.size()}, DType::I32, device_, compute_);
    CUDA_CHECK(cudaMemcpyAsync(images_.raw_data(), dataset.images.data(), dataset.images.size(),
                               cudaMemcpyHostToDevice, compute_));
    CUDA_CHECK(cudaMemcpyAsync(labels_.raw_data(), dataset.labels.data(), dataset.labels.size() * 4,
                               cudaMemcpyHostToDevice, compute_));
    CUDA_CHECK(cudaStreamSynchronize(compute_));  // the pageable sources may go away after this
    ids_pinned_ = Tensor::empty_pinned({samples_per_epoch}, DType::I32);
    ids_device_ = Tensor::empty({samples_per_epoch}, DType::I32, device_, compute_);
    ids_copied_.emplace();  // created here, on the loader's device
  }

  ~ResidentBackend() override {
    try {
      ids_copied_->synchronize();
      CUDA_CHECK(cudaStreamSynchronize(compute_));  // kernels may still read the dataset
    } catch (...) {                                 // a destructor must not throw
    }
  }

  bool prefetches() const override { return false; }

  void begin_epoch(std::span<const std::int64_t> indices, std::uint64_t) override {
    // A mid-epoch resume (a sampler position) gives fewer: the rest of the epoch's list.
    ENGINE_CHECK(static_cast<std::int64_t>(indices.size()) <= ids_pinned_.numel(),
                 "Loader: {} indices in an epoch, at most {} expected", indices.size(), ids_pinned_.numel());
    if (indices.empty()) return;
    DeviceGuard scope(device_.index);
    ids_copied_->synchronize();  // the previous epoch's copy out of the pinned buffer has finished
    std::int32_t* ids = ids_pinned_.data<std::int32_t>();
    for (std::size_t i = 0; i < indices.size(); ++i) {
      ENGINE_CHECK(indices[i] >= 0 && indices[i] < dataset_.size(),
                   "Loader: sample index {} outside the dataset of {} images", indices[i], dataset_.size());
      ids[i] = static_cast<std::int32_t>(indices[i]);
    }
    // On the compute stream: kernels of the previous epoch, queued before, still read the old list.
    CUDA_CHECK(
        cudaMemcpyAsync(ids_device_.raw_data(), ids, indices.size() * 4, cudaMemcpyHostToDevice, compute_));
    ids_copied_->record(compute_);
  }

  Batch take(int, std::int64_t offset, std::span<const std::int64_t> ids, std::uint64_t epoch) override {
    DeviceGuard scope(device_.index);
    const auto n = static_cast<std::int64_t>(ids.size());
    Batch batch;
    allocate_outputs(dataset_, n, device_, compute_, layout_, batch);
    cuda::AugmentBatchArgs a = kernel_args(dataset_, transform_, epoch, layout_);
    // With device positions the kernel adds the offset itself (ids_device_ keeps its address all run long,
    // so a captured launch reads the list every later epoch copies there).
    const std::int32_t* epoch_ids = ids_device_.data<std::int32_t>() + (device_batch_offset_ ? 0 : offset);
    a.device_epoch = device_epoch_;
    a.device_offset = device_batch_offset_;
    a.images = images_.data<std::uint8_t>();
    a.labels = labels_.data<std::int32_t>();
    a.gather = epoch_ids;
    a.sample_ids = epoch_ids;
    a.batch = n;
    a.out = batch.images.data<float>();
    a.out_labels = batch.labels.data<std::int32_t>();
    cuda::augment_normalize(a, compute_);
    return batch;
  }

 private:
  const Dataset& dataset_;
  const Transform& transform_;
  Layout layout_;  // of the batches' images
  Device device_;
  cudaStream_t compute_;
  Tensor images_;
  Tensor labels_;
  Tensor ids_pinned_;
  Tensor ids_device_;
  std::optional<Event> ids_copied_;          // recorded after the epoch's index copy
  const std::uint64_t* device_epoch_;        // LoaderOptions::device_epoch
  const std::int64_t* device_batch_offset_;  // LoaderOptions::device_batch_offset
};

}  // namespace

std::unique_ptr<LoaderBackend> make_cuda_staged_backend(const Dataset& dataset, const Transform& transform,
                                                        int slots, std::int64_t max_batch, Device device,
                                                        void* stream, Layout layout) {
  return std::make_unique<StagedBackend>(dataset, transform, slots, max_batch, device, stream, layout);
}

std::unique_ptr<LoaderBackend> make_cuda_resident_backend(const Dataset& dataset, const Transform& transform,
                                                          std::int64_t samples_per_epoch, Device device,
                                                          void* stream, const std::uint64_t* device_epoch,
                                                          const std::int64_t* device_batch_offset,
                                                          Layout layout) {
  return std::make_unique<ResidentBackend>(dataset, transform, samples_per_epoch, device, stream,
                                           device_epoch, device_batch_offset, layout);
}

}  // namespace engine::data

#endif  // ENGINE_HAVE_CUDA
