#pragma once
// Distributed evaluation: each rank evaluates its share of the validation set (DistributedSampler's
// EvalNoPad mode: disjoint shares whose union is the dataset, no padding), then one all-reduce sums the
// totals. The correct count and sample count are integers carried exactly in float64 (exact up to 2^53), so
// the accuracy is exactly the single-process accuracy for any world size; the loss sum may differ from a
// single process's in the last bits (a different summation order).

#include <cstdint>

#include "dist/process_group.h"

namespace engine::dist {

struct EvalTotals {
  double loss_sum = 0.0;     // sum of per-sample losses (not averaged)
  std::int64_t correct = 0;  // samples whose argmax is the label
  std::int64_t count = 0;    // samples evaluated

  double accuracy() const {
    return count > 0 ? static_cast<double>(correct) / static_cast<double>(count) : 0.0;
  }
  double mean_loss() const { return count > 0 ? loss_sum / static_cast<double>(count) : 0.0; }
};

// The sums over every rank of `local` (one all-reduce; `device` is where the NCCL group wants the data,
// ignored by gloo). A collective.
EvalTotals all_reduce_totals(ProcessGroup& pg, const EvalTotals& local, Device device = Device::cpu(),
                             void* stream = nullptr);

}  // namespace engine::dist
