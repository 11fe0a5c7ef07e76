#include "apps/train/training_plot.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "apps/train/gnuplot.h"
#include "core/error.h"

namespace engine::apps {

namespace {

// The epochs' tick spacing: a whole number, about 10 ticks over the run.
std::int64_t x_tick_step(const std::vector<EpochMetrics>& history) {
  const std::int64_t span = history.back().epoch - history.front().epoch;
  return std::max<std::int64_t>(1, (span + 9) / 10);
}

}  // namespace

void write_training_plot(const std::vector<EpochMetrics>& history, const std::string& png_path,
                         const std::string& title) {
  ENGINE_CHECK(!history.empty(), "--plot {}: no epoch to plot", png_path);
  const auto span =
      std::minmax_element(history.begin(), history.end(),
                          [](const EpochMetrics& a, const EpochMetrics& b) { return a.epoch < b.epoch; });
  const std::int64_t first_epoch = span.first->epoch, last_epoch = span.second->epoch;
  std::string data = "# epoch train_loss test_loss train_acc test_acc\n";
  for (const EpochMetrics& m : history) {
    data += fmt::format("{} {} {} {} {}\n", m.epoch, m.train_loss, m.test_loss, m.train_acc, m.test_acc);
  }
  draw_with_gnuplot(
      "--plot", png_path, data, [&](const std::string& data_path, const std::string& image_path) {
        std::ostringstream script;
        script << "set terminal pngcairo noenhanced size 1200,480 font 'Sans,10'\n"
               << "set output " << gnuplot_quoted(image_path) << "\n"
               << "set multiplot layout 1,2 title " << gnuplot_quoted(title) << "\n"
               << "set xlabel 'epoch'\nset grid\nset key top right\n"
               // Whole epochs on the x axis (about 10 ticks), and a margin that keeps points off the frame.
               << fmt::format("set xtics {}\nset format x '%.0f'\n", x_tick_step(history))
               << "set autoscale xfix\nset offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06\n"
               // One epoch (a first epoch, or the first of a resumed run without history) is a single x,
               // which gnuplot cannot autoscale: a unit range around it.
               << (first_epoch == last_epoch
                       ? fmt::format("set xrange [{}:{}]\n", static_cast<double>(first_epoch) - 0.5,
                                     static_cast<double>(first_epoch) + 0.5)
                       : std::string())
               << "set ylabel 'loss'\nset title 'loss'\n"
               << "plot " << gnuplot_quoted(data_path)
               << " using 1:2 with linespoints title 'train', '' using 1:3 with linespoints title 'test'\n"
               << "set ylabel 'accuracy (%)'\nset title 'accuracy'\nset key bottom right\n"
               << "plot " << gnuplot_quoted(data_path)
               << " using 1:4 with linespoints title 'train', '' using 1:5 with linespoints title 'test'\n"
               << "unset multiplot\n";
        return script.str();
      });
}

bool plot_or_warn(const std::vector<EpochMetrics>& history, const std::string& png_path,
                  const std::string& title) {
  try {
    write_training_plot(history, png_path, title);
    return true;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "cnn_train: warning: {}; training goes on{}\n", e.what(),
               std::filesystem::exists(png_path) ? ", the previous image is kept" : "");
    return false;
  }
}

}  // namespace engine::apps
