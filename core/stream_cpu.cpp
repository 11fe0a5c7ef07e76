// Stream and Event in CPU-only builds: declared (core/stream.h) so that code holding optional ones compiles
// without `#if`, but never made: a CUDA tensor cannot exist here, so reaching a constructor is a caller's
// bug, reported as such.
#include <utility>

#include "core/error.h"
#include "core/stream.h"

namespace engine {

Stream::Stream(int device, int /*priority*/) : device_(device) {
  ENGINE_FAIL("Stream on CUDA device {}: this build has no CUDA (configured with ENGINE_WITH_CUDA=OFF)",
              device);
}

Stream::~Stream() = default;

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), device_(other.device_) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  stream_ = std::exchange(other.stream_, nullptr);
  device_ = other.device_;
  return *this;
}

void Stream::synchronize() const { ENGINE_FAIL("Stream::synchronize: this build has no CUDA"); }

Event::Event(bool /*enable_timing*/) {
  ENGINE_FAIL("Event: this build has no CUDA (configured with ENGINE_WITH_CUDA=OFF)");
}

Event::~Event() = default;

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  event_ = std::exchange(other.event_, nullptr);
  return *this;
}

void Event::record(cudaStream_t /*stream*/) { ENGINE_FAIL("Event::record: this build has no CUDA"); }
void Event::wait_on(cudaStream_t /*stream*/) const { ENGINE_FAIL("Event::wait_on: this build has no CUDA"); }
void Event::synchronize() const { ENGINE_FAIL("Event::synchronize: this build has no CUDA"); }
bool Event::query() const { ENGINE_FAIL("Event::query: this build has no CUDA"); }
float Event::elapsed_ms_since(const Event& /*start*/) const {
  ENGINE_FAIL("Event::elapsed_ms_since: this build has no CUDA");
}

}  // namespace engine
