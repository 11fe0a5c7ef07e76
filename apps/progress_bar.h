#pragma once
// A one-line progress bar for the steps of an epoch, redrawn in place with '\r' on a terminal, silent
// elsewhere (logs and pipes get only the epoch lines).

#include <cstdint>

namespace engine::apps {

class ProgressBar {
 public:
  // Active only when `enabled` and stdout is a terminal.
  ProgressBar(std::int64_t total, bool enabled);
  void update(std::int64_t done);  // redraws at most ~50 times per epoch
  void clear();                    // erases the bar before the epoch's log line

 private:
  std::int64_t total_;
  std::int64_t last_drawn_ = -1;
  bool active_;
};

}  // namespace engine::apps
