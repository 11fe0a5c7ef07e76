#include "core/stream.h"

#include <utility>

#include "core/allocator.h"
#include "core/cuda_check.h"
#include "core/device_guard.h"

namespace engine {

Stream::Stream(int device, int priority) : device_(device) {
  DeviceGuard guard(device);
  CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
  guard.restore();
}

namespace {

// Before the handle goes back to the driver, which may give its value to the next stream created while this
// stream's queued work still runs: the device allocator stops handing this stream's blocks out on it.
void destroy_stream(cudaStream_t stream, int device) noexcept {
  if (stream == nullptr) return;
  try {
    device_allocator(device).retire_stream(stream);
  } catch (...) {
    // Destructors must not throw; the allocator's retire takes a lock and throws nothing in practice.
  }
  (void)cudaStreamDestroy(stream);  // a failure here means the context is already gone
}

}  // namespace

Stream::~Stream() { destroy_stream(stream_, device_); }

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), device_(other.device_) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    destroy_stream(stream_, device_);
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void Stream::synchronize() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Event::Event(bool enable_timing) {
  CUDA_CHECK(cudaEventCreateWithFlags(&event_, enable_timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(cudaStream_t stream) { CUDA_CHECK(cudaEventRecord(event_, stream)); }

void Event::wait_on(cudaStream_t stream) const { CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }

void Event::synchronize() const { CUDA_CHECK(cudaEventSynchronize(event_)); }

bool Event::query() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  CUDA_CHECK(status);
  return true;
}

float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

}  // namespace engine
