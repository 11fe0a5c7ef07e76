#pragma once
// What the Trainer's files (trainer.cpp: setup; trainer_epoch.cpp: the training steps; trainer_run.cpp: the
// epochs and evaluation; trainer_checkpoints.cpp: resume and save) share: the log line printer, the clock and
// each rank's dropout seed. Internal to them: nothing else includes it.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "apps/train/progress_bar.h"

namespace engine::apps::trainer_internal {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Each rank draws its own dropout masks, rank 0 those of a single process: one seed on every rank would
// drop the same units for every rank's samples. Derived from the run's seed, so --resume restores them.
inline std::uint64_t rank_dropout_seed(std::uint64_t seed, int rank) {
  return rank == 0 ? seed : seed ^ (0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(rank));
}
inline void print_line(const std::string& line) { print_log_line(line); }

}  // namespace engine::apps::trainer_internal
