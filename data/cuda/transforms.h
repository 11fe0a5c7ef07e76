#pragma once
// The CUDA augmentation kernel's launcher (CUDA builds only; the kernel is data/cuda/transforms.cu).
//
// One launch gathers uint8 images, crops, flips, normalizes and writes float32 NCHW (or NHWC), and gathers
// the labels alongside. It serves both loader paths:
//  - a staged batch (images[b] is row b; gather = nullptr), copied from pinned memory by the loader;
//  - a GPU-resident dataset (images is the whole uint8 dataset; row b reads images[gather[b]]).
// The draw for row b is keyed by sample_ids[b], the dataset index (data/augment_params.h), which is what
// makes the output equal to the CPU transform's bit for bit.

#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/layout.h"
#include "data/augment_params.h"

namespace engine::data::cuda {

constexpr int kMaxChannels = 8;

struct AugmentBatchArgs {
  const std::uint8_t* images = nullptr;  // device; [rows, C, H, W]
  const std::int32_t* labels = nullptr;  // device; one per row of `images`, or nullptr (no labels written)
  const std::int32_t* gather = nullptr;  // device; [batch] rows of `images`, or nullptr for rows 0..batch-1
  const std::int32_t* sample_ids = nullptr;  // device; [batch] dataset indices keying the draws
  std::int64_t batch = 0;
  std::int32_t channels = 0;
  std::int32_t height = 0;
  std::int32_t width = 0;
  AugmentSpec spec;
  std::uint64_t epoch = 0;
  float mean[kMaxChannels] = {};
  float std_dev[kMaxChannels] = {};
  float* out = nullptr;                // device; [batch, C, H, W] in out_layout
  Layout out_layout = Layout::NCHW;    // NHWC: channels last, what an NHWC model takes without a transpose
  std::int32_t* out_labels = nullptr;  // device; [batch], written when `labels` is set
  // A CUDA graph's step state (apps/train/step_state.h), or null: the kernel reads the epoch from
  // device_epoch instead of `epoch`, and starts gather and sample_ids at entry *device_offset. A replay of
  // the captured step then augments the next step's batch with the next epoch's draws.
  const std::uint64_t* device_epoch = nullptr;
  const std::int64_t* device_offset = nullptr;
};

// Checks the sizes, launches on `stream`, checks the launch.
void augment_normalize(const AugmentBatchArgs& args, cudaStream_t stream);

}  // namespace engine::data::cuda
