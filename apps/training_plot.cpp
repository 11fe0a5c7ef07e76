#include "apps/training_plot.h"

#include <algorithm>
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
  const std::string data_path = png_path + ".data.tmp";
  const std::string script_path = png_path + ".gp.tmp";
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
           << "set output " << quoted(png_path) << "\n"
           << "set multiplot layout 1,2 title " << quoted(title) << "\n"
           << "set xlabel 'epoch'\nset grid\nset key top right\n"
           // Whole epochs on the x axis (about 10 ticks), and a margin that keeps points off the frame.
           << fmt::format("set xtics {}\nset format x '%.0f'\n", x_tick_step(history))
           << "set autoscale xfix\nset offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06\n"
           << (history.size() == 1 ? "set xrange [0.5:1.5]\n" : "") << "set ylabel 'loss'\nset title 'loss'\n"
           << "plot " << quoted(data_path) << " using 1:2 with linespoints title 'train', '' using 1:3 with "
           << "linespoints title 'test'\n"
           << "set ylabel 'accuracy (%)'\nset title 'accuracy'\nset key bottom right\n"
           << "plot " << quoted(data_path) << " using 1:4 with linespoints title 'train', '' using 1:5 with "
           << "linespoints title 'test'\n"
           << "unset multiplot\n";
  }
  std::error_code ec;
  std::filesystem::remove(png_path, ec);
  const pid_t pid = ::fork();
  ENGINE_CHECK(pid >= 0, "--plot: cannot start gnuplot");
  if (pid == 0) {
    ::execl(gnuplot.c_str(), "gnuplot", script_path.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::filesystem::remove(data_path, ec);
  std::filesystem::remove(script_path, ec);
  ENGINE_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "--plot {}: gnuplot failed (status {})",
               png_path, status);
  ENGINE_CHECK(std::filesystem::exists(png_path) && std::filesystem::file_size(png_path, ec) > 0,
               "--plot {}: gnuplot wrote nothing", png_path);
}

}  // namespace engine::apps
