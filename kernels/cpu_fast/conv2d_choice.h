#pragma once
// The choice between a convolution direction's candidate primitives (kernels/cpu_fast/conv2d.cpp: direct or
// Winograd): with one candidate it runs; with several the first call times them on its real operands (as
// cuDNN's benchmark mode) and the choice is kept.

#include <chrono>
#include <cstddef>
#include <vector>

namespace engine::cpu_fast::conv_choice {

// The candidates of one direction (direct first, then Winograd where it applies and oneDNN builds it) and
// the one chosen: the only candidate, or under ConvAlgo::Auto the fastest on the first call (pick_fastest).
template <typename Impl>
struct Choice {
  std::vector<Impl> candidates;
  int chosen = -1;
};

// Runs each candidate (run(i) executes it, its reorders included, and waits), alternating their order over
// three rounds, the first untimed (it touches the buffers); the fastest round of each decides. The chosen
// candidate runs last, so the outputs are its own.
template <typename Run>
int pick_fastest(int n, Run&& run) {
  if (n == 1) {
    run(0);
    return 0;
  }
  std::vector<double> best(static_cast<std::size_t>(n), 1e30);
  int last = -1;
  for (int round = 0; round < 3; ++round) {
    for (int j = 0; j < n; ++j) {
      const int i = round % 2 == 0 ? j : n - 1 - j;
      const auto t0 = std::chrono::steady_clock::now();
      run(i);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (round > 0 && t < best[static_cast<std::size_t>(i)]) best[static_cast<std::size_t>(i)] = t;
      last = i;
    }
  }
  int chosen = 0;
  for (int i = 1; i < n; ++i)
    if (best[static_cast<std::size_t>(i)] < best[static_cast<std::size_t>(chosen)]) chosen = i;
  if (chosen != last) run(chosen);
  return chosen;
}

// Runs the direction: its first call picks the candidate (timing them when there are several).
template <typename Impl, typename Run>
void run_choice(Choice<Impl>& c, Run&& run) {
  if (c.chosen >= 0) {
    run(c.candidates[static_cast<std::size_t>(c.chosen)]);
    return;
  }
  c.chosen = pick_fastest(static_cast<int>(c.candidates.size()),
                          [&](int i) { run(c.candidates[static_cast<std::size_t>(i)]); });
}

}  // namespace engine::cpu_fast::conv_choice
