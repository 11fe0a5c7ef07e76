#pragma once
// RAII wrappers for CUDA streams and events.
//
// A Stream owns a non-blocking cudaStream_t on one device; an Event orders work between streams
// (record on one, wait on another) without a host synchronize, and times work on the GPU.
// Declared in every build so code can hold them without `#if` (the Reducer keeps optional ones for CUDA
// gradients); in CPU-only builds (core/stream_cpu.cpp) the constructors throw: there is nothing to make.

#include "core/cuda_types.h"

namespace engine {

class Stream {
 public:
  // A new non-blocking stream on `device` (it does not synchronize with the legacy default stream).
  explicit Stream(int device, int priority = 0);
  // Destroys the stream in CUDA builds (stream.cpp); the check would have the CPU-only build's never-made
  // stand-in (stream_cpu.cpp), which is trivial, default it here.
  ~Stream();  // NOLINT(performance-trivially-destructible)
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;

  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

class Event {
 public:
  // Timing events cost more to record; ordering-only events are created with timing disabled.
  explicit Event(bool enable_timing = false);
  ~Event();  // NOLINT(performance-trivially-destructible): as Stream's
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream);
  // Work queued on `stream` after this call waits until the recorded work is done; the host does not wait.
  void wait_on(cudaStream_t stream) const;
  void synchronize() const;
  bool query() const;  // true when the recorded work is done
  // Milliseconds between `start` and this event; both must have been recorded with timing enabled.
  float elapsed_ms_since(const Event& start) const;

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace engine
