#pragma once
// Checkpoints: one safetensors file (optim/safetensors.h) holding
//
//   the model's state dict under PyTorch's names, in state_dict() order:
//       "features.0.weight" F32 [64, 3, 3, 3], ..., "features.1.num_batches_tracked" I64 [] (0-dim)
//   the optimizer state, one tensor per parameter with momentum:
//       "optim.momentum_buffer.features.0.weight" F32 [64, 3, 3, 3] ...   (torch's
//       state[p]['momentum_buffer'])
//   the weight average when there is one (optim/ema.h), one tensor per parameter and BatchNorm buffer:
//       "optim.ema.features.0.weight" F32 [64, 3, 3, 3], "optim.ema.features.1.running_mean" ...
//   the training state, as strings in the header's "__metadata__":
//       format = "cnn_engine.checkpoint.v1", model, epoch (epochs completed), step (optimizer steps taken),
//       seed, dropout_offset, sampler_seed, sampler_epoch, sampler_position (entries of the sampler's epoch
//       already consumed: > 0 for a checkpoint written mid-epoch), plus whatever `extra` the trainer adds
//       (dataset, ...), and crc32: the CRC-32 (zlib's, 8 hex digits) of the tensor bytes, the tensors'
//       names, dtypes, shapes and offsets, and the other metadata, so bytes changed on disk are seen, not
//       loaded (files written before it have none and load unchecked, with a note)
//
// In PyTorch (docs/MODELS.md has the modules):
//   sd = safetensors.torch.load_file("ckpt.safetensors")
//   model.load_state_dict({k: v for k, v in sd.items() if not k.startswith("optim.")})   # strict
// and a file PyTorch wrote with safetensors.torch.save_file(model.state_dict(), path) loads here (with no
// optimizer or training state: a fresh start from those weights).
//
// Loading checks everything before it changes anything, so a bad file leaves the model as it was: every state
// entry of the model must be present with the model's dtype (F32 or F64 as the model runs; I64 for counters)
// and shape; no other tensor may be there except "optim." ones; a checkpoint whose metadata names another
// model is refused with both names. Errors are engine::Error naming the file and the tensor.

#include <cstdint>
#include <map>
#include <string>

#include "layers/model.h"
#include "optim/ema.h"
#include "optim/safetensors.h"
#include "optim/sgd.h"

namespace engine::optim {

inline constexpr const char* kCheckpointFormat = "cnn_engine.checkpoint.v1";
inline constexpr const char* kMomentumPrefix = "optim.momentum_buffer.";
inline constexpr const char* kEmaPrefix = "optim.ema.";
inline constexpr const char* kChecksumKey = "crc32";

struct TrainingState {
  std::int64_t epoch = 0;  // epochs completed: a resumed run starts at this epoch
  std::int64_t step = 0;   // optimizer steps taken
  std::uint64_t seed = 0;  // the run's seed (initialization, dropout, sampler, augmentation derive from it)
  std::uint64_t dropout_offset =
      0;  // ExecutionContext::dropout_offset: the next dropout call's Philox offset
  std::uint64_t sampler_seed = 0;
  std::uint64_t sampler_epoch = 0;     // the sampler's epoch at save time
  std::uint64_t sampler_position = 0;  // entries of sampler_epoch's list consumed (0: at an epoch boundary)
  std::map<std::string, std::string> extra = {};  // informational metadata (dataset, lr, ...), kept as is
};

// Writes the checkpoint (crash-safe: see write_safetensors). `sgd` may be null (weights only); `ema` may be
// null or not started yet (no average saved). CUDA tensors are copied to the host first (after the model's
// stream has finished its queued work).
void save_checkpoint(const std::string& path, const layers::Model& model, const Sgd* sgd,
                     const TrainingState& state, const WriteOptions& options = {},
                     const WeightAverage* ema = nullptr);

// Checks the file's crc32 against its contents. Returns true when it matches, false when the file
// has none (written before checksums, or not by us); throws engine::Error naming the file when it differs
// or is malformed.
bool verify_checkpoint_checksum(const SafetensorsFile& file);

struct LoadedCheckpoint {
  TrainingState state;
  bool has_training_state = false;  // the file is one of ours (format metadata present), not bare weights
  bool restored_momentum = false;
  bool restored_ema = false;
  bool checksum_verified = false;  // false: an older file without crc32, loaded unchecked
};

// Loads the model's state (and, when `sgd` is given and the file holds momentum buffers for every parameter,
// the optimizer's; and, when `ema` is given and the file holds an average, the average, which is then
// marked started) from `path`. Throws engine::Error naming the file and the tensor (see the header comment),
// or the file when its crc32 does not match its contents.
LoadedCheckpoint load_checkpoint(const std::string& path, layers::Model& model, Sgd* sgd,
                                 WeightAverage* ema = nullptr);

}  // namespace engine::optim
