#include "apps/train/training_plot.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"

namespace engine::apps {

namespace {

// gnuplot strings are single-quoted; a quote inside is doubled.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The epochs' tick spacing: a whole number, about 10 ticks over the run.
std::int64_t x_tick_step(const std::vector<EpochMetrics>& history) {
  const std::int64_t span = history.back().epoch - history.front().epoch;
  return std::max<std::int64_t>(1, (span + 9) / 10);
}

}  // namespace

std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / "gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return {};
}

void write_training_plot(const std::vector<EpochMetrics>& history, const std::string& png_path,
                         const std::string& title) {
  const std::string gnuplot = find_gnuplot();
  ENGINE_CHECK(!gnuplot.empty(), "--plot {}: gnuplot is not installed (Debian package gnuplot-nox)",
               png_path);
  ENGINE_CHECK(!history.empty(), "--plot {}: no epoch to plot", png_path);
  // This process's own temporary names: two runs plotting to one file never share them.
  const std::string stem = fmt::format("{}.{}", png_path, ::getpid());
  const std::string data_path = stem + ".data.tmp", script_path = stem + ".gp.tmp",
                    image_path = stem + ".png.tmp";
  const auto [first, last] =
      std::minmax_element(history.begin(), history.end(),
                          [](const EpochMetrics& a, const EpochMetrics& b) { return a.epoch < b.epoch; });
  {
    std::ofstream data(data_path);
    ENGINE_CHECK(data.good(), "--plot: cannot write '{}'", data_path);
    data << "# epoch train_loss test_loss train_acc test_acc\n";
    for (const EpochMetrics& m : history) {
      data << fmt::format("{} {} {} {} {}\n", m.epoch, m.train_loss, m.test_loss, m.train_acc, m.test_acc);
    }
    std::ofstream script(script_path);
    ENGINE_CHECK(script.good(), "--plot: cannot write '{}'", script_path);
    script << "set terminal pngcairo noenhanced size 1200,480 font 'Sans,10'\n"
           << "set output " << quoted(image_path) << "\n"
           << "set multiplot layout 1,2 title " << quoted(title) << "\n"
           << "set xlabel 'epoch'\nset grid\nset key top right\n"
           // Whole epochs on the x axis (about 10 ticks), and a margin that keeps points off the frame.
           << fmt::format("set xtics {}\nset format x '%.0f'\n", x_tick_step(history))
           << "set autoscale xfix\nset offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06\n"
           // One epoch (a first epoch, or the first of a resumed run without history) is a single x, which
           // gnuplot cannot autoscale: a unit range around it.
           << (first->epoch == last->epoch
                   ? fmt::format("set xrange [{}:{}]\n", static_cast<double>(first->epoch) - 0.5,
                                 static_cast<double>(first->epoch) + 0.5)
                   : std::string())
           << "set ylabel 'loss'\nset title 'loss'\n"
           << "plot " << quoted(data_path) << " using 1:2 with linespoints title 'train', '' using 1:3 with "
           << "linespoints title 'test'\n"
           << "set ylabel 'accuracy (%)'\nset title 'accuracy'\nset key bottom right\n"
           << "plot " << quoted(data_path) << " using 1:4 with linespoints title 'train', '' using 1:5 with "
           << "linespoints title 'test'\n"
           << "unset multiplot\n";
  }
  std::error_code ec;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(gnuplot.c_str(), "gnuplot", script_path.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  std::filesystem::remove(data_path, ec);
  std::filesystem::remove(script_path, ec);
  std::error_code size_ec, rename_ec;
  const bool exited_ok = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const bool drawn = exited_ok && std::filesystem::file_size(image_path, size_ec) > 0 && !size_ec;
  if (drawn) std::filesystem::rename(image_path, png_path, rename_ec);  // atomic: the old image or the new
  if (!drawn || rename_ec) std::filesystem::remove(image_path, ec);
  ENGINE_CHECK(pid > 0, "--plot {}: cannot start gnuplot", png_path);
  ENGINE_CHECK(exited_ok, "--plot {}: gnuplot {} (its message is above)", png_path,
               WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                 : fmt::format("was ended by signal {}", WTERMSIG(status)));
  ENGINE_CHECK(drawn, "--plot {}: gnuplot wrote nothing", png_path);
  ENGINE_CHECK(!rename_ec, "--plot {}: cannot rename {} to it: {}", png_path, image_path,
               rename_ec.message());
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
