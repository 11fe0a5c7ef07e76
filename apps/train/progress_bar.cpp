#include "apps/train/progress_bar.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <unistd.h>

#include <fmt/format.h>

namespace engine::apps {

namespace {

constexpr int kWidth = 40;

std::string duration_text(double seconds) {
  const auto s = static_cast<std::int64_t>(std::lround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string rate_text(double per_second) {  // "1,840" (the epoch line's digit grouping)
  const std::string digits = fmt::format("{}", std::llround(per_second));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

bool progress_bar_wanted(bool stdout_is_terminal, const char* (*getenv)(const char*)) {
  if (!stdout_is_terminal) return false;
  const char* term = getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  // mpirun (Open MPI, MPICH) and srun give ranks a pseudo-terminal or a pipe that ends in a log file.
  for (const char* launcher : {"OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_STEP_ID"}) {
    if (getenv(launcher) != nullptr) return false;
  }
  return true;
}

std::string progress_line(std::int64_t done, std::int64_t total, std::int64_t first, double seconds,
                          std::int64_t samples, double loss) {
  const int filled = static_cast<int>(done * kWidth / total);
  std::string bar(static_cast<std::size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  std::string line = fmt::format("  [{}] {}/{}", bar, done, total);
  const std::int64_t steps = done - first;
  if (steps <= 0 || seconds <= 0.0) return line;
  line += fmt::format(" | {} img/s", rate_text(static_cast<double>(samples) / seconds));
  if (std::isfinite(loss)) line += fmt::format(" | loss {:.4f}", loss);
  const double left = seconds / static_cast<double>(steps) * static_cast<double>(total - done);
  return line + " | " + duration_text(left) + " left";
}

namespace {

ProgressBar* drawn_bar = nullptr;  // the bar on the terminal's last line, if any

}  // namespace

void print_log_line(const std::string& line) {
  if (drawn_bar != nullptr) drawn_bar->clear();
  fmt::print("{}\n", line);
  std::fflush(stdout);
}

ProgressBar::~ProgressBar() {
  if (drawn_bar == this) drawn_bar = nullptr;
}

ProgressBar::ProgressBar(std::int64_t total, std::int64_t first, bool enabled)
    : total_(total),
      first_(first),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_),
      active_(enabled && total > 0 &&
              progress_bar_wanted(::isatty(STDOUT_FILENO) == 1,
                                  [](const char* name) -> const char* { return std::getenv(name); })) {}

void ProgressBar::add_loss(float loss) {
  loss_sum_ += static_cast<double>(loss);
  ++losses_;
}

void ProgressBar::update(std::int64_t done, std::int64_t samples) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  const std::int64_t tick = done * 50 / total_;
  if (tick == last_tick_ && done != total_ && now - last_draw_ < std::chrono::seconds(1)) return;
  last_tick_ = tick;
  last_draw_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double loss = losses_ > 0 ? loss_sum_ / static_cast<double>(losses_) : std::nan("");
  const std::string line = progress_line(done, total_, first_, seconds, samples, loss);
  // Padded to the widest line so far: a shorter line (the ETA lost a digit) leaves no stale characters.
  drawn_width_ = std::max(drawn_width_, line.size());
  std::printf("\r%-*s", static_cast<int>(drawn_width_), line.c_str());
  std::fflush(stdout);
  drawn_bar = this;
}

void ProgressBar::clear() {
  if (drawn_bar == this) drawn_bar = nullptr;
  if (!active_ || drawn_width_ == 0) return;
  std::printf("\r%*s\r", static_cast<int>(drawn_width_), "");
  std::fflush(stdout);
}

}  // namespace engine::apps
