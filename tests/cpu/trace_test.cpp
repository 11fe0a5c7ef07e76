// The training trace (core/trace.h): spans nest and sort, anchored spans follow their anchor, the JSON is
// Chrome trace-event format with a named track per thread, nothing is recorded without an active recorder,
// and a model's forward and backward give one span per layer, children inside their parents.

#include "core/trace.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "layers/models.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::trace {
namespace {

// Makes `r` the active recorder for the scope.
struct Activate {
  explicit Activate(Recorder& r) { set_active(&r); }
  ~Activate() { set_active(nullptr); }
};

void pause_us(int us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); }

bool inside(const Span& child, const Span& parent) {
  return child.start_us >= parent.start_us &&
         child.start_us + child.duration_us <= parent.start_us + parent.duration_us;
}

TEST(Trace, ScopesNestOnTheirTracksAndAnchoredSpansFollowTheirAnchor) {
  Recorder r;
  std::size_t step_id = 0;
  {
    Activate on(r);
    step_id = r.begin("step 1", "step");
    {
      const TraceScope forward("forward", [] { return std::string("model"); });
      pause_us(200);
      const TraceScope child("forward", [] { return std::string("conv1"); });
      pause_us(200);
    }
    {
      const TraceScope data(
          "data", [] { return std::string("next batch"); }, Track::kData);
    }
    r.end(step_id);
  }
  r.add_relative("bucket 0", "allreduce", Track::kCommunication, step_id, 150.0, 50.0);
  const std::vector<Span> spans = r.spans();
  ASSERT_EQ(spans.size(), 5u);
  std::map<std::string, Span> by_name;
  for (const Span& s : spans) by_name[s.name] = s;
  EXPECT_TRUE(inside(by_name["model"], by_name["step 1"]));
  EXPECT_TRUE(inside(by_name["conv1"], by_name["model"]));
  EXPECT_GE(by_name["model"].duration_us, 400.0);
  EXPECT_EQ(by_name["next batch"].track, Track::kData);
  EXPECT_DOUBLE_EQ(by_name["bucket 0"].start_us, by_name["step 1"].start_us + 150.0);
  EXPECT_EQ(by_name["bucket 0"].duration_us, 50.0);
  for (std::size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].start_us, spans[i].start_us);
  EXPECT_EQ(spans[0].name, "step 1");  // a tie with its first child: the longer span first
}

// A span begun at another timer's reading (the reducer's step start) starts there, not when begin_at ran,
// so offsets measured from that reading land where they happened.
TEST(Trace, BeginAtStartsTheSpanAtTheGivenTime) {
  Recorder r;
  const Recorder::Clock::time_point before = Recorder::Clock::now();
  pause_us(2000);
  const std::size_t late = r.begin("late", "step");
  const std::size_t at = r.begin_at("at", "step", before);
  r.end(at);
  r.end(late);
  std::map<std::string, Span> by_name;
  for (const Span& s : r.spans()) by_name[s.name] = s;
  EXPECT_GE(by_name["late"].start_us - by_name["at"].start_us, 2000.0);
  EXPECT_GE(by_name["at"].duration_us, by_name["late"].duration_us + 2000.0);
}

TEST(Trace, NothingIsRecordedWithoutAnActiveRecorder) {
  Recorder r;
  bool named = false;
  {
    const TraceScope s("forward", [&] {
      named = true;
      return std::string("x");
    });
  }
  EXPECT_FALSE(named);  // the name is not even built
  EXPECT_TRUE(r.spans().empty());
}

TEST(Trace, WritesChromeTraceEventJsonWithNamedTracks) {
  Recorder r;
  {
    Activate on(r);
    const TraceScope s("loss", [] { return std::string("cross \"entropy\""); });
  }
  const auto path = testing::scratch_dir("trace_", "json") / "trace.json";
  r.write_json(path.string(), "rank 3", 3);
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".partial"));
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<std::string> threads;
  int complete = 0;
  for (const auto& e : j["traceEvents"]) {
    EXPECT_EQ(e["pid"], 3);
    if (e["ph"] == "M" && e["name"] == "thread_name") threads.push_back(e["args"]["name"]);
    if (e["ph"] == "M" && e["name"] == "process_name") {
      EXPECT_EQ(e["args"]["name"], "rank 3");
    }
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_EQ(e["name"], "cross \"entropy\"");
      EXPECT_EQ(e["cat"], "loss");
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_EQ(e["tid"], 0);
    }
  }
  EXPECT_EQ(complete, 1);
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_EQ(threads[0], "compute");
}

TEST(Trace, EveryLayerOfAModelHasAForwardAndABackwardSpanInsideItsParent) {
  layers::Model m = layers::build_model("cnn3", 3, 10, 32, 32);
  m.finalize(layers::testing::cpu_context(), 1);
  const Tensor x = layers::testing::random_tensor({2, 3, 32, 32}, DType::F32, 7);
  Recorder r;
  {
    Activate on(r);
    const Tensor y = m.forward(x, layers::Mode::Train);
    const Tensor dy = layers::testing::random_tensor(y.shape(), DType::F32, 8);
    m.backward(dy);
  }
  const std::vector<Span> spans = r.spans();
  std::map<std::string, int> forward, backward;
  for (const Span& s : spans) (s.category == "forward" ? forward : backward)[s.name] += 1;
  EXPECT_GT(forward.size(), 5u);
  EXPECT_EQ(forward.size(), backward.size());
  for (const auto& [name, count] : forward) {
    EXPECT_EQ(count, 1) << name;
    EXPECT_EQ(backward[name], 1) << name;
  }
  // The root (the longest forward span) holds every other forward span.
  const Span* root = nullptr;
  for (const Span& s : spans)
    if (s.category == "forward" && (root == nullptr || s.duration_us > root->duration_us)) root = &s;
  ASSERT_NE(root, nullptr);
  for (const Span& s : spans) {
    if (s.category == "forward") {
      EXPECT_TRUE(inside(s, *root)) << s.name;
    }
  }
}

}  // namespace
}  // namespace engine::trace
