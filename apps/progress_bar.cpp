#include "apps/progress_bar.h"

#include <cstdio>
#include <string>
#include <unistd.h>

namespace engine::apps {

namespace {
constexpr int kWidth = 40;
}

ProgressBar::ProgressBar(std::int64_t total, bool enabled)
    : total_(total), active_(enabled && total > 0 && ::isatty(STDOUT_FILENO) == 1) {}

void ProgressBar::update(std::int64_t done) {
  if (!active_) return;
  const std::int64_t tick = done * 50 / total_;
  if (tick == last_drawn_ && done != total_) return;
  last_drawn_ = tick;
  const int filled = static_cast<int>(done * kWidth / total_);
  std::string bar(static_cast<std::size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  std::printf("\r  [%s] %lld/%lld", bar.c_str(), static_cast<long long>(done),
              static_cast<long long>(total_));
  std::fflush(stdout);
}

void ProgressBar::clear() {
  if (!active_) return;
  std::printf("\r%*s\r", kWidth + 32, "");
  std::fflush(stdout);
}

}  // namespace engine::apps
