#pragma once
// A --checkpoint-dir holds the checkpoints of one run (issue 44): a new run into a folder that holds another
// run's checkpoints is refused before anything is read, saying how to continue that run (--resume auto) or
// replace it (--overwrite, which removes them once the new run holds the folder's lock). Before, the new run
// silently overwrote epochN.safetensors, and a later --resume auto continued whichever run's checkpoint was
// furthest in training, not the run that wrote the folder last.

#include <string>
#include <vector>

#include "apps/train/train_config.h"

namespace engine::apps {

// The checkpoints cnn_train writes that `dir` holds (last.safetensors, epochN.safetensors,
// stepN.safetensors), by name, sorted; none when `dir` does not exist.
std::vector<std::string> run_checkpoints_in(const std::string& dir);

// Throws engine::Error (bad input) when `config` starts a new run (no --resume, no --eval-only, no
// --overwrite) into a --checkpoint-dir holding checkpoints, naming the folder, some of them, and the flags.
void check_new_run_folder(const TrainConfig& config);

// --overwrite: removes run_checkpoints_in(dir). Called by rank 0 while it holds the folder's lock.
void remove_run_checkpoints(const std::string& dir);

}  // namespace engine::apps
