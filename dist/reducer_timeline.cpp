#include "dist/reducer_timeline.h"

#include <optional>

#include "core/error.h"
#if ENGINE_HAVE_CUDA
#include "core/stream.h"  // Event (core/stream.cpp: CUDA builds only)
#endif

namespace engine::dist {

#if ENGINE_HAVE_CUDA
struct ReducerTimeline::Events {
  Event step_start{true}, backward_end{true};
  std::vector<Event> ready, queued, start, end;  // per bucket
};
#else
struct ReducerTimeline::Events {};  // never made: CUDA gradients need a CUDA build
#endif

ReducerTimeline::ReducerTimeline(std::vector<std::size_t> bucket_bytes, [[maybe_unused]] bool cuda)
    : bytes_(std::move(bucket_bytes)) {
  const std::size_t n = bytes_.size();
  ready_.resize(n);
  queued_.resize(n);
#if ENGINE_HAVE_CUDA
  if (cuda) {
    events_ = std::make_unique<Events>();
    for (auto* v : {&events_->ready, &events_->queued, &events_->start, &events_->end}) {
      v->reserve(n);
      for (std::size_t b = 0; b < n; ++b) v->emplace_back(/*enable_timing=*/true);
    }
  }
#endif
}

ReducerTimeline::~ReducerTimeline() = default;

void ReducerTimeline::mark([[maybe_unused]] void* compute) {
#if ENGINE_HAVE_CUDA
  if (events_) {
    if (pending_) read();  // the previous step's events are about to be recorded again
    events_->step_start.record(static_cast<cudaStream_t>(compute));
    marked = true;
    return;
  }
#endif
  step_start_ = Clock::now();
  marked = true;
}

void ReducerTimeline::on_ready(std::size_t b, [[maybe_unused]] void* compute) {
#if ENGINE_HAVE_CUDA
  if (events_) {
    events_->ready[b].record(static_cast<cudaStream_t>(compute));
    return;
  }
#endif
  ready_[b] = Clock::now();
}

void ReducerTimeline::on_queued(std::size_t b, [[maybe_unused]] void* compute) {
#if ENGINE_HAVE_CUDA
  if (events_) {
    events_->queued[b].record(static_cast<cudaStream_t>(compute));
    return;
  }
#endif
  queued_[b] = Clock::now();
}

void ReducerTimeline::on_comm_start([[maybe_unused]] std::size_t b, [[maybe_unused]] void* comm) {
#if ENGINE_HAVE_CUDA
  if (events_) events_->start[b].record(static_cast<cudaStream_t>(comm));
#endif
}

void ReducerTimeline::on_comm_end([[maybe_unused]] std::size_t b, [[maybe_unused]] void* comm) {
#if ENGINE_HAVE_CUDA
  if (events_) events_->end[b].record(static_cast<cudaStream_t>(comm));
#endif
}

void ReducerTimeline::on_backward_end([[maybe_unused]] void* compute) {
#if ENGINE_HAVE_CUDA
  if (events_) {
    events_->backward_end.record(static_cast<cudaStream_t>(compute));
    return;
  }
#endif
  backward_end_ = Clock::now();
}

void ReducerTimeline::end_step(const std::vector<std::unique_ptr<Work>>& works) {
  marked = false;
  if (events_) {
    pending_ = true;
    return;
  }
  auto ms = [this](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(t - step_start_).count();
  };
  last_.buckets.clear();
  for (std::size_t b = 0; b < bytes_.size(); ++b) {
    const std::optional<Work::HostSpan> span = works[b]->host_span();
    last_.buckets.push_back(BucketTiming{.bucket = b,
                                         .bytes = bytes_[b],
                                         .ready_ms = ms(ready_[b]),
                                         .queued_ms = ms(queued_[b]),
                                         .start_ms = ms(span ? span->start : queued_[b]),
                                         .end_ms = ms(span ? span->end : queued_[b])});
  }
  last_.backward_end_ms = ms(backward_end_);
}

const StepTimeline& ReducerTimeline::read() {
#if ENGINE_HAVE_CUDA
  if (events_ && pending_) {
    const Event& t0 = events_->step_start;
    auto ms = [&t0](const Event& e) {
      e.synchronize();
      return static_cast<double>(e.elapsed_ms_since(t0));
    };
    last_.buckets.clear();
    for (std::size_t b = 0; b < bytes_.size(); ++b) {
      last_.buckets.push_back(BucketTiming{.bucket = b,
                                           .bytes = bytes_[b],
                                           .ready_ms = ms(events_->ready[b]),
                                           .queued_ms = ms(events_->queued[b]),
                                           .start_ms = ms(events_->start[b]),
                                           .end_ms = ms(events_->end[b])});
    }
    last_.backward_end_ms = ms(events_->backward_end);
    pending_ = false;
  }
#endif
  return last_;
}

}  // namespace engine::dist
