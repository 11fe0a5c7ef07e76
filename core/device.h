#pragma once
// Where a tensor lives: the host (CPU) or one CUDA device.

#include <string>

namespace engine {

struct Device {
  enum class Kind { Cpu, Cuda };

  Kind kind = Kind::Cpu;
  int index = 0;  // the CUDA ordinal; 0 for the CPU

  static Device cpu() { return {Kind::Cpu, 0}; }
  static Device cuda(int index) { return {Kind::Cuda, index}; }

  bool is_cpu() const { return kind == Kind::Cpu; }
  bool is_cuda() const { return kind == Kind::Cuda; }
  std::string str() const;  // "cpu" or "cuda:N"

  friend bool operator==(const Device&, const Device&) = default;
};

// True when this build has the CUDA device compiled in (ENGINE_HAVE_CUDA).
bool built_with_cuda();

// Number of CUDA devices visible to this process. 0, never an error, when the build has no CUDA, the
// machine has no driver, or no GPU is visible (CUDA_VISIBLE_DEVICES empty, etc.).
int device_count();

// Makes `index` the current CUDA device of the calling thread. Throws engine::Error naming the device
// and how many exist when it is out of range.
void set_device(int index);

}  // namespace engine
