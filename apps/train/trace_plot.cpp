#include "apps/train/trace_plot.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "apps/train/gnuplot.h"
#include "core/error.h"

namespace engine::apps {
namespace {

int colour_of(const std::string& category) {
  if (category == "step") return 0x9e9e9e;
  if (category == "forward") return 0x1f77b4;
  if (category == "backward") return 0xd62728;
  if (category == "loss") return 0xff7f0e;
  if (category == "optimizer") return 0x2ca02c;
  if (category == "allreduce") return 0x17becf;
  return 0x9467bd;  // data, and anything else
}

// The row of a span off the compute track (above the step's row 0).
int row_of(trace::Track track) { return track == trace::Track::kCommunication ? 2 : 1; }

// "all-reduce bucket 3" -> "b3": the label on its bar, where the bar is wide enough to hold it (a fraction
// `share` of the step).
std::string bar_label(const trace::Span& s, double share) {
  const std::string prefix = "all-reduce bucket ";
  if (s.name.rfind(prefix, 0) != 0 || share < 0.025) return "\"\"";
  return fmt::format("b{}", s.name.substr(prefix.size()));
}

// The compute rows' names below the step: the model's forward and backward, then its layers, then layers
// inside layers (a residual block's).
std::string compute_row_tics(int depth_max) {
  std::string tics;
  for (int d = 1; d <= depth_max; ++d)
    tics += fmt::format(", '{}' {}", d == 1 ? "model" : d == 2 ? "layers" : "inner layers", -d);
  return tics;
}

}  // namespace

void write_trace_plot(const std::vector<trace::Span>& spans, const std::string& png_path) {
  const auto step =
      std::find_if(spans.begin(), spans.end(), [](const trace::Span& s) { return s.category == "step"; });
  ENGINE_CHECK(step != spans.end(), "--trace {}: no step was traced", png_path);
  const double t0 = step->start_us, t1 = step->start_us + step->duration_us;
  // The spans of the first step (its data wait just before it included), each at its depth: the number of
  // compute spans that hold it.
  std::vector<const trace::Span*> shown;
  bool communication = false;
  for (const trace::Span& s : spans) {
    const bool inside = s.track == trace::Track::kData
                            ? (s.start_us + s.duration_us >= t0 - 1e3 && s.start_us <= t1)
                            : (s.start_us >= t0 - 0.01 && s.start_us + s.duration_us <= t1 + 0.01);
    if (inside) shown.push_back(&s);
    communication = communication || (inside && s.track == trace::Track::kCommunication);
  }
  std::string data = "# x_mid_ms y half_width_ms colour label\n";
  int depth_max = 0;
  for (const trace::Span* s : shown) {
    int depth = 0;
    if (s->track == trace::Track::kCompute) {
      for (const trace::Span* p : shown) {
        if (p != s && p->track == trace::Track::kCompute && p->start_us <= s->start_us &&
            p->start_us + p->duration_us >= s->start_us + s->duration_us && p->duration_us > s->duration_us)
          ++depth;
      }
      depth_max = std::max(depth_max, depth);
    } else {
      depth = -row_of(s->track);  // the data and communication tracks, above the compute rows
    }
    const double a = (s->start_us - t0) / 1000.0, b = (s->start_us + s->duration_us - t0) / 1000.0;
    data += fmt::format("{} {} {} {} {}\n", (a + b) / 2, -depth, std::max((b - a) / 2, 1e-4),
                        colour_of(s->category), bar_label(*s, (b - a) * 1000.0 / std::max(t1 - t0, 1e-9)));
  }
  const std::string title = fmt::format(
      "{} ({:.2f} ms): forward blue, backward red, loss orange, "
      "optimizer green, data wait purple{}",
      step->name, (t1 - t0) / 1000.0, communication ? ", all-reduce cyan" : "");
  const int top = communication ? 2 : 1;
  draw_with_gnuplot(
      "--trace", png_path, data, [&](const std::string& data_path, const std::string& image_path) {
        std::ostringstream script;
        script << "set terminal pngcairo noenhanced size 1400," << 160 + 36 * (depth_max + 1 + top)
               << " font 'Sans,10'\n"
               << "set output " << gnuplot_quoted(image_path) << "\n"
               << "set title " << gnuplot_quoted(title) << "\n"
               << "set xlabel 'ms from the step start'\nset grid xtics\nunset key\n"
               << fmt::format("set yrange [{}:{}]\n", -depth_max - 0.6, top + 0.6) << "set ytics ("
               << (communication ? "'all-reduce' 2, " : "") << "'data' 1, 'step' 0"
               << compute_row_tics(depth_max) << ")\n"
               << "set style fill solid 0.85 border lc rgb 'white'\n"
               << "plot " << gnuplot_quoted(data_path)
               << " using 1:2:3:(0.4):4 with boxxyerror lc rgb variable, '' using 1:2:5 with labels\n";
        return script.str();
      });
}

}  // namespace engine::apps
