#include "apps/train/step_state_buffer.h"

#include <cstring>

#include "core/error.h"

#if ENGINE_HAVE_CUDA
#include "core/cuda_check.h"
#include "core/stream.h"
#endif

namespace engine::apps {

#if ENGINE_HAVE_CUDA
struct StepStateBuffer::Events {
  std::vector<Event> recorded;  // after slot i's copy
  std::vector<bool> used;       // slot i has a copy queued
};

StepStateBuffer::StepStateBuffer(int device, void* stream)
    : stream_(stream),
      pinned_(Tensor::empty_pinned({kSlots * static_cast<std::int64_t>(sizeof(StepState))}, DType::U8)),
      device_(Tensor::zeros({static_cast<std::int64_t>(sizeof(StepState))}, DType::U8, Device::cuda(device),
                            stream)),
      events_(std::make_unique<Events>()) {
  events_->recorded.resize(kSlots);
  events_->used.assign(kSlots, false);
}

void StepStateBuffer::publish(const StepState& state) {
  const int slot = next_slot_;
  next_slot_ = (next_slot_ + 1) % kSlots;
  if (events_->used[static_cast<std::size_t>(slot)]) {
    // The copy out of this slot kSlots steps ago must be done before the host writes it again.
    events_->recorded[static_cast<std::size_t>(slot)].synchronize();
  }
  std::uint8_t* host = pinned_.data<std::uint8_t>() + static_cast<std::size_t>(slot) * sizeof(StepState);
  std::memcpy(host, &state, sizeof(StepState));
  const auto stream = static_cast<cudaStream_t>(stream_);
  CUDA_CHECK(cudaMemcpyAsync(device_.raw_data(), host, sizeof(StepState), cudaMemcpyHostToDevice, stream));
  events_->recorded[static_cast<std::size_t>(slot)].record(stream);
  events_->used[static_cast<std::size_t>(slot)] = true;
}
#else
struct StepStateBuffer::Events {};

StepStateBuffer::StepStateBuffer(int, void*) : stream_(nullptr) {
  ENGINE_FAIL("the device step state needs a CUDA device, and this build has none");
}

void StepStateBuffer::publish(const StepState&) {
  ENGINE_FAIL("the device step state needs a CUDA device, and this build has none");
}
#endif

#if ENGINE_HAVE_CUDA
StepStateBuffer::~StepStateBuffer() {
  // The pinned slots go back to a cache that hands them out at once: the copies out of them must be done.
  if (!events_) return;
  for (std::size_t i = 0; i < events_->used.size(); ++i) {
    if (!events_->used[i]) continue;
    try {
      events_->recorded[i].synchronize();
    } catch (...) {
      // Destructors must not throw; a failed wait means the context is gone, and the copy with it.
    }
  }
}
#else
StepStateBuffer::~StepStateBuffer() = default;
#endif

}  // namespace engine::apps
