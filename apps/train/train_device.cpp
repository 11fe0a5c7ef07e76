#include "apps/train/train_device.h"

#include <sys/resource.h>

#include "core/allocator.h"
#include "core/device.h"

#if ENGINE_HAVE_CUDA
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/stream.h"
#include "kernels/cuda/conv2d_cudnn.h"
#include "kernels/cuda/handles.h"
#endif

namespace engine::apps {

#if ENGINE_HAVE_CUDA
struct TrainDevice::Cuda {
  Stream stream;
  cuda::CudaHandles handles;
  Cuda(int device, bool deterministic, bool tf32_convolutions)
      : stream(device),
        handles(device, stream.get(), cuda::training_handles_options(deterministic, tf32_convolutions)) {}
  Cuda(const Cuda&) = delete;
  Cuda& operator=(const Cuda&) = delete;
  // ENGINE_PRINT_CONV_PLANS=1 (a diagnostic the GPU tests set): the algorithm cuDNN chose per convolution
  // shape and direction, on stderr at the end of the run, so a comparison that fails can say which ran.
  ~Cuda() {
    const char* print = std::getenv("ENGINE_PRINT_CONV_PLANS");
    if (print == nullptr || std::string(print) != "1") return;
    for (const std::string& line : cuda::describe_conv_plans(handles)) {
      std::fprintf(stderr, "cnn_train: conv plan: %s\n", line.c_str());
    }
  }
};
#else
struct TrainDevice::Cuda {};
#endif

TrainDevice::TrainDevice(bool force_cpu, int device_index, bool deterministic, Precision precision,
                         std::uint64_t dropout_seed) {
  const bool tf32 = tf32_convolutions(precision);
  context_.dtype = DType::F32;
  context_.autocast_bf16 = autocast_bf16(precision);
  context_.dropout_seed = dropout_seed;
  const bool use_cuda = !force_cpu && device_count() > 0;
  fell_back_ = !force_cpu && !use_cuda;
  if (use_cuda) {
#if ENGINE_HAVE_CUDA
    set_device(device_index);
    cuda_ = std::make_unique<Cuda>(device_index, deterministic, tf32);
    context_.allow_tf32 = tf32;
    context_.device = Device::cuda(device_index);
    context_.stream = cuda_->stream.get();
    context_.handles = &cuda_->handles;
    label_ = "[GPU" + std::to_string(device_index) + "]";
    return;
#endif
  }
  (void)deterministic;
  (void)tf32;
  (void)device_index;
  context_.device = Device::cpu();
  label_ = "[CPU]";
}

TrainDevice::~TrainDevice() = default;

void TrainDevice::synchronize() const {
#if ENGINE_HAVE_CUDA
  if (cuda_) cuda_->stream.synchronize();
#endif
}

std::uint64_t TrainDevice::peak_memory_bytes() const {
  if (is_cuda()) return device_allocator(context_.device.index).stats().peak_bytes_in_use;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

void TrainDevice::reset_peak_memory() {
  if (is_cuda()) device_allocator(context_.device.index).reset_peak();
}

}  // namespace engine::apps
