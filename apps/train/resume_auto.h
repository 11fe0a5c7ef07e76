#pragma once
// `--resume auto`: the newest complete checkpoint in --checkpoint-dir, so that a restarted job (torchrun
// --max-restarts, a requeued Slurm job, a preempted run started again with the same command) continues by
// itself, and a first start, finding none, begins from scratch.
//
// Every *.safetensors file in the folder is read whole and validated (a file that does not parse, or whose
// crc32 does not match its bytes, is skipped with a note: a crash cannot leave one, checkpoints are written
// to a temporary name and renamed, but a partial copy can); files that are not ours (PyTorch's weights, no
// training state) are ignored. The newest is the one furthest in training: the most epochs completed, then
// the furthest sampler position within the next epoch; a tie (epochE.safetensors and last.safetensors hold
// the same state) goes to the first name in order, so every rank that reads the same folder picks the same
// file.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace engine::apps {

struct ResumePoint {
  std::string path;
  std::int64_t epoch = 0;     // epochs completed
  std::int64_t position = 0;  // entries of the next epoch's sampler list consumed (0: an epoch boundary)
  std::int64_t step = 0;      // optimizer steps taken
};

// The newest checkpoint in `dir`, or nullopt when it has none (or does not exist). `notes` receives one line
// per file skipped because it did not parse.
std::optional<ResumePoint> newest_checkpoint(const std::string& dir,
                                             std::vector<std::string>* notes = nullptr);

}  // namespace engine::apps
