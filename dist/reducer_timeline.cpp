#include "dist/reducer_timeline.h"

#include <optional>

#include <fmt/format.h>

#include "core/error.h"
#include "core/stream.h"  // Event (made for CUDA gradients only)
#include "core/trace.h"

namespace engine::dist {

struct ReducerTimeline::Events {
  Event step_start{true}, backward_end{true};
  std::vector<Event> ready, queued, start, end;  // per bucket
};

ReducerTimeline::ReducerTimeline(std::vector<std::size_t> bucket_bytes, bool cuda)
    : bytes_(std::move(bucket_bytes)) {
  const std::size_t n = bytes_.size();
  ready_.resize(n);
  queued_.resize(n);
  if (cuda) {
    events_ = std::make_unique<Events>();
    for (auto* v : {&events_->ready, &events_->queued, &events_->start, &events_->end}) {
      v->reserve(n);
      for (std::size_t b = 0; b < n; ++b) v->emplace_back(/*enable_timing=*/true);
    }
  }
}

ReducerTimeline::~ReducerTimeline() = default;

std::chrono::steady_clock::time_point ReducerTimeline::mark(void* compute) {
  marked = true;
  if (events_) {
    if (pending_) read();  // the previous step's events are about to be recorded again
    events_->step_start.record(static_cast<cudaStream_t>(compute));
    return Clock::now();
  }
  step_start_ = Clock::now();
  return step_start_;
}

void ReducerTimeline::on_ready(std::size_t b, void* compute) {
  if (events_) {
    events_->ready[b].record(static_cast<cudaStream_t>(compute));
    return;
  }
  ready_[b] = Clock::now();
}

void ReducerTimeline::on_queued(std::size_t b, void* compute) {
  if (events_) {
    events_->queued[b].record(static_cast<cudaStream_t>(compute));
    return;
  }
  queued_[b] = Clock::now();
}

void ReducerTimeline::on_comm_start(std::size_t b, void* comm) {
  if (events_) events_->start[b].record(static_cast<cudaStream_t>(comm));
}

void ReducerTimeline::on_comm_end(std::size_t b, void* comm) {
  if (events_) events_->end[b].record(static_cast<cudaStream_t>(comm));
}

void ReducerTimeline::on_backward_end(void* compute) {
  if (events_) {
    events_->backward_end.record(static_cast<cudaStream_t>(compute));
    return;
  }
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
  return last_;
}

void add_to_trace(const StepTimeline& timeline, const std::vector<std::string>& bucket_params,
                  trace::Recorder& recorder, std::size_t anchor) {
  for (const BucketTiming& t : timeline.buckets) {
    ENGINE_CHECK(t.bucket < bucket_params.size(), "add_to_trace: bucket {} of {} named", t.bucket,
                 bucket_params.size());
    recorder.add_relative(fmt::format("all-reduce bucket {}", t.bucket), "allreduce",
                          trace::Track::kCommunication, anchor, 1000.0 * t.start_ms,
                          1000.0 * (t.end_ms - t.start_ms),
                          {{"bytes", std::to_string(t.bytes)},
                           {"parameters", bucket_params[t.bucket]},
                           {"ready_ms", fmt::format("{:.3f}", t.ready_ms)},
                           {"queued_ms", fmt::format("{:.3f}", t.queued_ms)}});
  }
}

}  // namespace engine::dist
