// The Reducer's timeline on a training trace (label cpu; dist::add_to_trace, Reducer::trace_timeline): over a
// gloo group of one, traced steps show every bucket's all-reduce on the communication track inside its step,
// after the backward of the layers whose gradients it carries began, at the times the timeline measured; a
// micro-batch adds nothing; after stop_timeline nothing is recorded.

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/trace.h"
#include "dist/bootstrap.h"
#include "dist/reducer.h"
#include "dist/tcp_store.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/common/error_of.h"
#include "tests/common/trace_checks.h"
#include "tests/dist/dist_test_models.h"

namespace engine::dist {
namespace {

using engine::testing::error_of;

struct TracedRun {
  std::unique_ptr<ProcessGroup> pg;
  layers::Model model;
  std::unique_ptr<Reducer> reducer;
  trace::Recorder recorder;
  layers::SoftmaxCrossEntropy loss;

  TracedRun() : pg(world_of_one()), model(testing::build_test_model("plain", pg.get())) {
    ReducerOptions ro;  // float64 "plain" in several buckets, the linear bias alone in the first
    ro.first_bucket_mb = 0.1 / 1024.0;
    ro.bucket_mb = 1.0 / 1024.0;
    ro.record_timeline = true;
    reducer = std::make_unique<Reducer>(*pg, model, ro);
  }

  static std::unique_ptr<ProcessGroup> world_of_one() {
    DistEnv e;
    e.master_port = find_free_port();
    return init_process_group(e, Backend::Gloo, std::chrono::milliseconds(5000));
  }

  // One step as cnn_train --trace takes it: the step start marked, the step's span begun there, forward and
  // backward traced, and (synced) the all-reduces added.
  void step(std::uint64_t seed, bool sync) {
    reducer->set_sync(sync);
    const trace::Recorder::Clock::time_point start =
        sync ? reducer->mark_step_start() : trace::Recorder::Clock::now();
    const std::size_t span = recorder.begin_at("step " + std::to_string(seed), "step", start);
    trace::set_active(&recorder);
    loss.forward(model.context(), model.forward(testing::make_inputs(0, 4, seed), layers::Mode::Train),
                 testing::make_labels(0, 4, seed));
    model.backward(loss.backward());
    trace::set_active(nullptr);
    reducer->finish();
    recorder.end(span);
    if (sync) reducer->trace_timeline(recorder, span);
  }
};

TEST(DistReducerTrace, EveryBucketsAllReduceIsInsideItsStepAfterItsLayersBackwardBegan) {
  TracedRun run;
  const std::size_t n = run.reducer->buckets().size();
  ASSERT_GE(n, 3u);
  run.step(1, true);
  run.step(2, false);  // a micro-batch of an accumulation: nothing is all-reduced, nothing is added
  run.step(3, true);
  const std::vector<trace::Span> spans = run.recorder.spans();
  std::vector<trace::Span> synced;  // the micro-batch's step span has no all-reduce: left out of the check
  for (const trace::Span& s : spans)
    if (s.name != "step 2") synced.push_back(s);
  engine::testing::expect_all_reduces_in_every_step(synced, n, 2);

  // At the times the timeline measured (the last step's), with its bytes and parameters.
  const StepTimeline& t = run.reducer->timeline();
  const trace::Span* step3 = nullptr;
  for (const trace::Span& s : spans)
    if (s.name == "step 3") step3 = &s;
  ASSERT_NE(step3, nullptr);
  std::size_t bytes = 0;
  for (const BucketTiming& b : t.buckets) {
    bytes += b.bytes;
    for (const trace::Span& s : spans) {
      if (s.name != "all-reduce bucket " + std::to_string(b.bucket) || s.start_us < step3->start_us) continue;
      EXPECT_NEAR(s.start_us, step3->start_us + 1000.0 * b.start_ms, 1e-6) << s.name;
      EXPECT_NEAR(s.duration_us, 1000.0 * (b.end_ms - b.start_ms), 1e-6) << s.name;
      EXPECT_EQ(engine::testing::span_arg(s, "bytes"), std::to_string(b.bytes));
    }
  }
  EXPECT_EQ(bytes, run.model.flat_gradients().nbytes());
  const trace::Span* first = nullptr;  // bucket 0 holds the last layer's bias alone
  for (const trace::Span& s : spans)
    if (s.name == "all-reduce bucket 0") first = &s;
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(engine::testing::span_arg(*first, "parameters"), run.model.parameters().back().name);
}

TEST(DistReducerTrace, AfterStopTimelineNothingIsRecordedAndTheTimelineIsRefused) {
  TracedRun run;
  run.step(1, true);
  run.reducer->stop_timeline();
  EXPECT_NE(error_of([&] { run.reducer->mark_step_start(); }).find("record_timeline"), std::string::npos);
  run.reducer->set_sync(true);
  run.loss.forward(run.model.context(), run.model.forward(testing::make_inputs(0, 4, 5), layers::Mode::Train),
                   testing::make_labels(0, 4, 5));
  run.model.backward(run.loss.backward());
  run.reducer->finish();  // a step without the timeline still averages
  EXPECT_NE(error_of([&] { run.reducer->timeline(); }).find("record_timeline"), std::string::npos);
}

TEST(DistReducerTrace, ABucketWithoutNamesIsRefused) {
  StepTimeline t;
  t.buckets.push_back(
      BucketTiming{.bucket = 1, .bytes = 8, .ready_ms = 0, .queued_ms = 0, .start_ms = 0, .end_ms = 1});
  trace::Recorder r;
  const std::size_t span = r.begin("step", "step");
  r.end(span);
  EXPECT_NE(error_of([&] { add_to_trace(t, {"a.weight"}, r, span); }).find("bucket 1 of 1"),
            std::string::npos);
}

}  // namespace
}  // namespace engine::dist
