#pragma once
// What a trace of data-parallel training steps must show (core/trace.h; the all-reduces put there by
// dist::add_to_trace), whether it comes from the Recorder (tests/dist, CPU through gloo and CUDA through
// NCCL) or from cnn_train's JSON file (tests/cpu/cnn_train_observe_test.cpp): in every "step" span, each
// gradient bucket's all-reduce exactly once, on the communication track (not compute's), inside the step,
// starting no earlier than the backward span of any layer whose parameters it carries (its "parameters" arg
// names them: "features.0.weight" is the layer 'features.0', whose backward span is "Conv2d 'features.0'").

#include <cstddef>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/trace.h"

namespace engine::testing {

inline std::string span_arg(const trace::Span& s, const std::string& name) {
  for (const auto& [key, value] : s.args)
    if (key == name) return value;
  return "";
}

// `tolerance_us`: what the JSON's rounding to 1 ns may move a time by.
inline void expect_all_reduces_in_every_step(const std::vector<trace::Span>& spans, std::size_t buckets,
                                             std::size_t steps, double tolerance_us = 0.0) {
  std::vector<const trace::Span*> step_spans;
  for (const trace::Span& s : spans)
    if (s.category == "step") step_spans.push_back(&s);
  ASSERT_EQ(step_spans.size(), steps);
  std::size_t all_reduces = 0;
  for (const trace::Span& s : spans) {
    if (s.category != "allreduce") continue;
    ++all_reduces;
    EXPECT_EQ(s.track, trace::Track::kCommunication) << s.name;
  }
  EXPECT_EQ(all_reduces, buckets * steps);
  for (const trace::Span* step : step_spans) {
    const double begin = step->start_us, end = step->start_us + step->duration_us;
    auto inside = [&](const trace::Span& s) {
      return s.start_us >= begin - tolerance_us && s.start_us + s.duration_us <= end + tolerance_us;
    };
    std::multiset<std::string> seen;
    for (const trace::Span& s : spans) {
      if (s.category != "allreduce" || !inside(s)) continue;
      seen.insert(s.name);
      std::istringstream params(span_arg(s, "parameters"));
      int named = 0;
      for (std::string p; params >> p; ++named) {
        std::string layer(1, '\'');  // appended, not "'" + ...: gcc 12's -Wrestrict misfires on that
        layer.append(p, 0, p.rfind('.'));
        layer.push_back('\'');
        const trace::Span* backward = nullptr;
        for (const trace::Span& b : spans) {
          const bool of_layer = b.name.size() >= layer.size() &&
                                b.name.compare(b.name.size() - layer.size(), layer.size(), layer) == 0;
          if (b.category == "backward" && of_layer && inside(b)) backward = &b;
        }
        ASSERT_NE(backward, nullptr) << "no backward span of " << layer << " in " << step->name;
        EXPECT_EQ(backward->track, trace::Track::kCompute);
        EXPECT_GE(s.start_us + tolerance_us, backward->start_us)
            << s.name << " starts before the backward of " << backward->name << " began, in " << step->name;
      }
      EXPECT_GT(named, 0) << s.name << " names no parameter";
    }
    for (std::size_t b = 0; b < buckets; ++b)
      EXPECT_EQ(seen.count("all-reduce bucket " + std::to_string(b)), 1u)
          << "bucket " << b << " in " << step->name;
    EXPECT_EQ(seen.size(), buckets) << step->name;
  }
}

}  // namespace engine::testing
