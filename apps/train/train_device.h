#pragma once
// Where a training process runs: a CUDA device (its own stream and cuDNN/cuBLAS handles) or the CPU, as the
// ExecutionContext every layer of the model reads, plus the two things the log line needs from the device:
// its label ("[GPU0]", "[CPU]") and the peak memory of the last epoch.

#include <cstdint>
#include <memory>
#include <string>

#include "apps/train/precision.h"
#include "layers/execution_context.h"

namespace engine::apps {

class TrainDevice {
 public:
  // The CPU when `force_cpu` or when no GPU is visible (then `fell_back_to_cpu()` is true), else CUDA device
  // `device_index`. `deterministic` picks deterministic cuDNN algorithms by heuristic instead of a timed
  // search; `precision` (apps/train/precision.h) says whether cuDNN may use TF32 tensor cores (GEMMs stay
  // fp32, as PyTorch's default) and whether Conv2d and Linear run bf16 autocast.
  TrainDevice(bool force_cpu, int device_index, bool deterministic, Precision precision,
              std::uint64_t dropout_seed);
  ~TrainDevice();
  TrainDevice(const TrainDevice&) = delete;
  TrainDevice& operator=(const TrainDevice&) = delete;

  const layers::ExecutionContext& context() const { return context_; }
  // --layout: the memory order of the activations of the models built on this context.
  void set_layout(Layout layout) { context_.layout = layout; }
  bool is_cuda() const { return context_.device.is_cuda(); }
  bool fell_back_to_cpu() const { return fell_back_; }
  const std::string& label() const { return label_; }
  void synchronize() const;  // waits for the stream's queued work (no-op on the CPU)

  // Peak memory in bytes since the last reset: the device allocator's peak on CUDA, the process's peak
  // resident set on the CPU (which cannot be reset: the peak of the whole run so far).
  std::uint64_t peak_memory_bytes() const;
  void reset_peak_memory();

 private:
  struct Cuda;  // the stream and handles, CUDA builds only
  std::unique_ptr<Cuda> cuda_;
  layers::ExecutionContext context_;
  std::string label_;
  bool fell_back_ = false;
};

}  // namespace engine::apps
