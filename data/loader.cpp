#include "data/loader.h"

#include <algorithm>
#include <span>
#include <utility>

#include "core/error.h"
#include "data/loader_backend.h"
#include "data/prefetcher.h"

namespace engine::data {

namespace {

// Checks that a sample index from the sampler lies inside the dataset (cheap; catches a sampler and a
// dataset that disagree before any out-of-bounds read).
void check_sample(const Dataset& dataset, std::int64_t id) {
  ENGINE_CHECK(id >= 0 && id < dataset.size(), "Loader: sample index {} outside the dataset of {} images", id,
               dataset.size());
}

// The CPU path: the worker writes the transformed batch straight into fresh output tensors.
class CpuBackend final : public LoaderBackend {
 public:
  CpuBackend(const Dataset& dataset, const Transform& transform, int slots, Layout layout)
      : dataset_(dataset), transform_(transform), layout_(layout), slots_(static_cast<std::size_t>(slots)) {}

  bool prefetches() const override { return true; }

  void fill(int slot, std::span<const std::int64_t> ids, std::uint64_t epoch) override {
    const auto n = static_cast<std::int64_t>(ids.size());
    const std::int64_t chw = dataset_.image_bytes();
    Batch& b = slots_[static_cast<std::size_t>(slot)];
    b.images = Tensor::empty({n, dataset_.channels, dataset_.height, dataset_.width}, DType::F32,
                             Device::cpu(), nullptr, layout_);
    b.labels = Tensor::empty({n}, DType::I32);
    float* out = b.images.data<float>();
    std::int32_t* labels = b.labels.data<std::int32_t>();
    std::vector<float> scratch;
    std::vector<std::uint8_t> pixels(dataset_.on_disk() ? static_cast<std::size_t>(chw) : 0);  // one image
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t id = ids[static_cast<std::size_t>(i)];
      check_sample(dataset_, id);
      const std::uint8_t* image = dataset_.on_disk() ? pixels.data() : dataset_.image(id);
      labels[i] = dataset_.on_disk() ? dataset_.source->read(id, epoch, pixels.data())
                                     : dataset_.labels[static_cast<std::size_t>(id)];
      transform_.apply_in_layout(image, dataset_.channels, dataset_.height, dataset_.width, id, epoch,
                                 layout_, out + i * chw, scratch);
    }
  }

  Batch take(int slot, std::int64_t, std::span<const std::int64_t>, std::uint64_t) override {
    return std::move(slots_[static_cast<std::size_t>(slot)]);
  }

 private:
  const Dataset& dataset_;
  const Transform& transform_;
  Layout layout_;
  std::vector<Batch> slots_;
};

}  // namespace

std::unique_ptr<LoaderBackend> make_cpu_backend(const Dataset& dataset, const Transform& transform, int slots,
                                                Layout layout) {
  return std::make_unique<CpuBackend>(dataset, transform, slots, layout);
}

Loader::Loader(const Dataset& dataset, DistributedSampler sampler, LoaderOptions options)
    : dataset_(dataset), sampler_(sampler), options_(std::move(options)), transform_(options_.transform) {
  validate(dataset_, "Loader");
  ENGINE_CHECK(sampler_.dataset_size() == dataset_.size(),
               "Loader: the sampler covers {} samples, the dataset has {}", sampler_.dataset_size(),
               dataset_.size());
  ENGINE_CHECK(options_.batch_size >= 1, "Loader: batch_size {} must be at least 1", options_.batch_size);
  ENGINE_CHECK(options_.prefetch_depth >= 1, "Loader: prefetch_depth {} must be at least 1",
               options_.prefetch_depth);
  ENGINE_CHECK(options_.num_workers >= 1, "Loader: num_workers {} must be at least 1", options_.num_workers);
  ENGINE_CHECK(options_.transform.mean.empty() ||
                   static_cast<std::int64_t>(options_.transform.mean.size()) == dataset_.channels,
               "Loader: the transform normalizes {} channels, the images have {}",
               options_.transform.mean.size(), dataset_.channels);
  ENGINE_CHECK(
      options_.gpu_resident || (options_.device_epoch == nullptr && options_.device_batch_offset == nullptr),
      "Loader: device epoch and batch offset need the GPU-resident path (gpu_resident)");
  const Device device = options_.device;
  if (device.is_cpu()) {
    ENGINE_CHECK(!options_.gpu_resident, "Loader: gpu_resident needs a CUDA device, not {}", device.str());
    backend_ = make_cpu_backend(dataset_, transform_, options_.prefetch_depth, options_.image_layout);
    return;
  }
#if ENGINE_HAVE_CUDA
  ENGINE_CHECK(device.index >= 0 && device.index < device_count(),
               "Loader: device {} does not exist ({} visible)", device.str(), device_count());
  ENGINE_CHECK(dataset_.size() <= 0x7fffffff, "Loader: {} samples exceed the CUDA path's int32 indices",
               dataset_.size());
  ENGINE_CHECK(!options_.gpu_resident || !dataset_.on_disk(),
               "Loader: gpu_resident needs the dataset in memory; this one is read from disk ({}...)",
               dataset_.source->name(0));
  if (options_.gpu_resident) {
    backend_ = make_cuda_resident_backend(dataset_, transform_, sampler_.num_samples(), device,
                                          options_.stream, options_.device_epoch,
                                          options_.device_batch_offset, options_.image_layout);
  } else {
    backend_ = make_cuda_staged_backend(dataset_, transform_, options_.prefetch_depth, options_.batch_size,
                                        device, options_.stream, options_.image_layout);
  }
#else
  ENGINE_FAIL("Loader: device {} needs CUDA, and this build has none (ENGINE_WITH_CUDA=OFF)", device.str());
#endif
}

Loader::~Loader() {
  prefetcher_.reset();  // join the workers before the buffers they write go away
  backend_.reset();
}

std::int64_t Loader::num_batches() const {
  const std::int64_t n = sampler_.num_samples(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::int64_t Loader::batch_count(std::int64_t batch) const {
  return std::min(options_.batch_size,
                  static_cast<std::int64_t>(indices_.size()) - batch * options_.batch_size);
}

void Loader::assemble(std::int64_t batch, int slot) {
  if (options_.before_batch) options_.before_batch(batch);
  const std::span<const std::int64_t> ids(indices_.data() + batch * options_.batch_size,
                                          static_cast<std::size_t>(batch_count(batch)));
  backend_->fill(slot, ids, sampler_.epoch());
}

void Loader::start_epoch(std::uint64_t epoch, std::int64_t position) {
  prefetcher_.reset();  // abandons an unfinished epoch: stops and joins its workers
  started_ = false;
  sampler_.set_epoch(epoch);
  sampler_.set_position(position);
  indices_ = sampler_.indices();
  next_batch_ = 0;
  backend_->begin_epoch(indices_, epoch);
  if (backend_->prefetches()) {
    prefetcher_ = std::make_unique<Prefetcher>(
        num_batches(), options_.prefetch_depth, options_.num_workers,
        [this](std::int64_t batch, int slot) { assemble(batch, slot); }, [this] { backend_->worker_init(); });
  }
  started_ = true;
}

bool Loader::next(Batch& batch) {
  if (!started_) start_epoch(sampler_.epoch());
  if (next_batch_ >= num_batches()) return false;
  const std::int64_t k = next_batch_;
  const std::int64_t offset = k * options_.batch_size;
  const std::span<const std::int64_t> ids(indices_.data() + offset, static_cast<std::size_t>(batch_count(k)));
  if (prefetcher_) {
    const int slot = prefetcher_->acquire(k);  // rethrows a worker's failure
    batch = backend_->take(slot, offset, ids, sampler_.epoch());
    prefetcher_->release(slot);
  } else {
    if (options_.before_batch) options_.before_batch(k);
    batch = backend_->take(-1, offset, ids, sampler_.epoch());
  }
  batch.index = k;
  ++next_batch_;
  return true;
}

}  // namespace engine::data
