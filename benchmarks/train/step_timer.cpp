#include "benchmarks/train/step_timer.h"

#include <algorithm>

#include "core/error.h"

#if ENGINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/stream.h"
#endif

namespace engine::bench {

namespace {

constexpr std::size_t kMarks = kPhases + 1;  // begin + one per phase

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Data: return "data";
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::AllReduce: return "allreduce";
    case Phase::Optimizer: return "optimizer";
  }
  return "?";
}

struct StepTimer::Impl {
  bool cuda = false;
  void* stream = nullptr;
  // marks[step * kMarks + i]; which marks of the current step were set
  std::vector<std::chrono::steady_clock::time_point> host;
#if ENGINE_HAVE_CUDA
  std::vector<Event> events;
#endif
  std::size_t next_mark = 0;  // within the current step

  void record(std::size_t index) {
    if (cuda) {
#if ENGINE_HAVE_CUDA
      events[index].record(static_cast<cudaStream_t>(stream));
#endif
    } else {
      host[index] = std::chrono::steady_clock::now();
    }
  }
};

StepTimer::StepTimer(Device device, void* stream, std::size_t max_steps)
    : impl_(std::make_unique<Impl>()), max_steps_(max_steps) {
  impl_->cuda = device.is_cuda();
  impl_->stream = stream;
  if (impl_->cuda) {
#if ENGINE_HAVE_CUDA
    impl_->events.reserve(max_steps * kMarks);
    for (std::size_t i = 0; i < max_steps * kMarks; ++i) impl_->events.emplace_back(true);
#else
    ENGINE_FAIL("StepTimer: a CUDA device in a CPU-only build");
#endif
  } else {
    impl_->host.resize(max_steps * kMarks);
  }
}

StepTimer::~StepTimer() = default;

void StepTimer::begin_step() {
  ENGINE_CHECK(steps_ < max_steps_, "StepTimer: more than the {} steps prepared", max_steps_);
  ++steps_;
  impl_->record((steps_ - 1) * kMarks);
  impl_->next_mark = 1;
}

void StepTimer::end(Phase p) {
  ENGINE_CHECK(steps_ > 0, "StepTimer: end() before begin_step()");
  // Mark 1 + p; a phase skipped since the last mark gets the same time (0 ms).
  const std::size_t target = 1 + static_cast<std::size_t>(p);
  const std::size_t base = (steps_ - 1) * kMarks;
  for (std::size_t m = impl_->next_mark; m <= target; ++m) impl_->record(base + m);
  impl_->next_mark = std::max(impl_->next_mark, target + 1);
}

std::array<double, kPhases> StepTimer::median_ms() const {
  std::array<double, kPhases> out{};
  for (std::size_t p = 0; p < kPhases; ++p) {
    std::vector<double> v;
    for (std::size_t s = 0; s < steps_; ++s) {
      const std::size_t a = s * kMarks + p, b = a + 1;
      if (impl_->cuda) {
#if ENGINE_HAVE_CUDA
        v.push_back(static_cast<double>(impl_->events[b].elapsed_ms_since(impl_->events[a])));
#endif
      } else {
        v.push_back(std::chrono::duration<double, std::milli>(impl_->host[b] - impl_->host[a]).count());
      }
    }
    out[p] = median_of(v);
  }
  return out;
}

double StepTimer::median_step_ms() const {
  std::vector<double> v;
  for (std::size_t s = 0; s < steps_; ++s) {
    const std::size_t a = s * kMarks, b = a + kMarks - 1;
    if (impl_->cuda) {
#if ENGINE_HAVE_CUDA
      v.push_back(static_cast<double>(impl_->events[b].elapsed_ms_since(impl_->events[a])));
#endif
    } else {
      v.push_back(std::chrono::duration<double, std::milli>(impl_->host[b] - impl_->host[a]).count());
    }
  }
  return median_of(v);
}

}  // namespace engine::bench
