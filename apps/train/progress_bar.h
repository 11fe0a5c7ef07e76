#pragma once
// A one-line progress bar for the steps of an epoch, redrawn in place with '\r' on a terminal:
//   [=================>                      ] 22/100 | 1,840 img/s | loss 1.2345 | 0:42 left
// Silent elsewhere: logs and pipes get only the epoch lines. A process started by mpirun or srun is silent
// too: its stdout may be a pseudo-terminal of the launcher, which writes it into a redirected log.

#include <chrono>
#include <cstdint>
#include <string>

namespace engine::apps {

// Whether a bar is drawn: stdout is a terminal, TERM is not "dumb", and no MPI or Slurm launcher started the
// process. `getenv` reads the environment (a parameter for the tests).
bool progress_bar_wanted(bool stdout_is_terminal, const char* (*getenv)(const char*));

// The bar's text for `done` of `total` steps, `seconds` and `samples` after step `first` (where a resumed
// epoch began). `loss` is the mean training loss of those steps, or NaN where it is not on the host (a GPU
// keeps it on the device, and reading it would cost a sync per step): then the loss is left out.
std::string progress_line(std::int64_t done, std::int64_t total, std::int64_t first, double seconds,
                          std::int64_t samples, double loss);

// One line of the run's log on stdout, flushed, after erasing a progress bar drawn on the terminal: a line
// printed mid-epoch (a checkpoint saved, a trace written) never lands on the bar, which the next step
// redraws.
void print_log_line(const std::string& line);

class ProgressBar {
 public:
  // Steps `first` to `total` of an epoch; drawn only when `enabled` and progress_bar_wanted().
  ProgressBar(std::int64_t total, std::int64_t first, bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  // A step's training loss, where it is on the host (never on a GPU: that would sync every step).
  void add_loss(float loss);
  // `samples` trained since `first`. Redraws ~50 times per epoch, or each second.
  void update(std::int64_t done, std::int64_t samples);
  void clear();  // erases the bar before the epoch's log line

 private:
  std::int64_t total_, first_;
  std::int64_t last_tick_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::size_t drawn_width_ = 0;
  double loss_sum_ = 0.0;  // the running loss: the mean of add_loss's values
  std::int64_t losses_ = 0;
  bool active_;
};

}  // namespace engine::apps
