#include "core/trace.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <span>

#include <fmt/format.h>

#include "core/durable_file.h"
#include "core/error.h"
#include "core/stream.h"

namespace engine::trace {
namespace {

Recorder* g_active = nullptr;

const char* track_name(Track t) {
  switch (t) {
    case Track::kCompute: return "compute";
    case Track::kData: return "data (waiting for the next batch)";
    case Track::kCommunication: return "communication (gradient all-reduce)";
  }
  return "?";
}

// JSON string contents: names are layer and tensor names, but a quote or a control character must not break
// the file.
std::string escaped(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

// A span's ends: host times (us from the origin), or CUDA events to read later; anchored spans take their
// start from another span's.
struct Recorder::Pending {
  Span span;
  double host_start = 0, host_end = 0;
  int event_start = -1, event_end = -1;  // indices into CudaEvents::events, or -1 (host clock)
  std::size_t anchor = 0;
  bool anchored = false, ended = false;
};

struct Recorder::CudaEvents {
  Event origin{true};
  std::deque<Event> events;  // deque: recorded events never move
};

Recorder::Recorder(cudaStream_t stream) : stream_(stream), origin_(Clock::now()) {
  if (stream_ != nullptr) {
    events_ = std::make_unique<CudaEvents>();
    events_->origin.record(stream_);
  }
}

Recorder::~Recorder() {
  if (g_active == this) g_active = nullptr;
}

std::size_t Recorder::begin(std::string name, std::string category, Track track) {
  return begin_at(std::move(name), std::move(category), Clock::now(), track);
}

std::size_t Recorder::begin_at(std::string name, std::string category, Clock::time_point start, Track track) {
  auto p = std::make_unique<Pending>();
  p->span = Span{std::move(name), std::move(category), track, 0, 0, {}};
  if (events_ && track == Track::kCompute) {  // queued on the stream: timed where it runs
    p->event_start = static_cast<int>(events_->events.size());
    events_->events.emplace_back(true).record(stream_);
  } else {
    p->host_start = std::chrono::duration<double, std::micro>(start - origin_).count();
  }
  pending_.push_back(std::move(p));
  return pending_.size() - 1;
}

void Recorder::end(std::size_t id) {
  ENGINE_CHECK(id < pending_.size() && !pending_[id]->ended, "trace: span {} ended twice or never begun", id);
  Pending& p = *pending_[id];
  if (p.event_start >= 0) {
    p.event_end = static_cast<int>(events_->events.size());
    events_->events.emplace_back(true).record(stream_);
  } else {
    p.host_end = std::chrono::duration<double, std::micro>(Clock::now() - origin_).count();
  }
  p.ended = true;
}

void Recorder::add_relative(std::string name, std::string category, Track track, std::size_t anchor,
                            double offset_us, double duration_us,
                            std::vector<std::pair<std::string, std::string>> args) {
  ENGINE_CHECK(anchor < pending_.size(), "trace: anchor span {} does not exist", anchor);
  auto p = std::make_unique<Pending>();
  p->span = Span{std::move(name), std::move(category), track, offset_us, duration_us, std::move(args)};
  p->anchor = anchor;
  p->anchored = true;
  p->ended = true;
  pending_.push_back(std::move(p));
}

std::vector<Span> Recorder::spans() {
  std::vector<double> starts(pending_.size(), 0.0);
  std::vector<Span> out;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = *pending_[i];
    if (!p.ended) continue;  // still open: not part of the trace
    Span s = p.span;
    if (p.anchored) {
      s.start_us = starts[p.anchor] + p.span.start_us;  // anchors open before what hangs on them
    } else if (p.event_start >= 0) {
      const Event& a = events_->events[static_cast<std::size_t>(p.event_start)];
      const Event& b = events_->events[static_cast<std::size_t>(p.event_end)];
      b.synchronize();
      s.start_us = 1000.0 * static_cast<double>(a.elapsed_ms_since(events_->origin));
      s.duration_us = 1000.0 * static_cast<double>(b.elapsed_ms_since(a));
    } else {
      s.start_us = p.host_start;
      s.duration_us = p.host_end - p.host_start;
    }
    starts[i] = s.start_us;
    out.push_back(std::move(s));
  }
  // Ties (a parent and its first child) keep the longer span first, so viewers nest them.
  std::stable_sort(out.begin(), out.end(), [](const Span& a, const Span& b) {
    return a.start_us != b.start_us ? a.start_us < b.start_us : a.duration_us > b.duration_us;
  });
  return out;
}

void Recorder::write_json(const std::string& path, const std::string& process_name, int pid) {
  const std::vector<Span> all = spans();
  std::string json = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  json +=
      fmt::format(R"({{"ph": "M", "name": "process_name", "pid": {}, "tid": 0, "args": {{"name": "{}"}}}})",
                  pid, escaped(process_name));
  for (const Track t : {Track::kCompute, Track::kData, Track::kCommunication}) {
    json += fmt::format(
        ",\n{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": "
        "\"{}\"}}}}",
        pid, static_cast<int>(t), track_name(t));
  }
  for (const Span& s : all) {
    json += fmt::format(
        ",\n{{\"ph\": \"X\", \"name\": \"{}\", \"cat\": \"{}\", \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, "
        "\"dur\": {:.3f}",
        escaped(s.name), escaped(s.category), pid, static_cast<int>(s.track), s.start_us, s.duration_us);
    if (!s.args.empty()) {
      json += ", \"args\": {";
      for (std::size_t i = 0; i < s.args.size(); ++i) {
        json += fmt::format("{}\"{}\": \"{}\"", i == 0 ? "" : ", ", escaped(s.args[i].first),
                            escaped(s.args[i].second));
      }
      json += "}";
    }
    json += "}";
  }
  json += "\n]}\n";
  // A reader never sees half a trace, and a failed write leaves nothing behind.
  const std::span<const std::uint8_t> piece(reinterpret_cast<const std::uint8_t*>(json.data()), json.size());
  write_file_durably("--trace", path, {&piece, 1});
}

Recorder* active() { return g_active; }

void set_active(Recorder* recorder) { g_active = recorder; }

}  // namespace engine::trace
