#pragma once
// ExecutionContext: where and how a model's layers (and the ops they call, kernels/ops) run. One per model
// (Model::context()); every layer of the model reads the same object, so changing the stream or the dropout
// state there changes it for all of them.
//
// CUDA types never appear here: the stream is a `void*` (a cudaStream_t) and the cuDNN/cuBLAS handles are an
// opaque pointer to the kernels/cuda handle object, so layer headers compile in CPU-only builds and in files
// that do not include CUDA headers.

#include <cstdint>
#include <string_view>

#include "core/device.h"
#include "core/dtype.h"
#include "core/layout.h"

namespace engine::cuda {
class CudaHandles;  // kernels/cuda/handles.h: the cuDNN and cuBLAS handles of one device, and conv plans
}  // namespace engine::cuda

namespace engine {

// Which convolution implementation the CUDA path of Conv2d uses. The CPU path: kernels/cpu_fast (F32).
enum class ConvAlgorithm {
  Cudnn,         // cuDNN (the default: fastest)
  ImplicitGemm,  // kernels/cuda/conv2d_implicit_gemm.cu: our own implicit-GEMM convolution (to compare with
                 // cuDNN)
};

std::string_view conv_algorithm_name(ConvAlgorithm a);

struct ExecutionContext {
  Device device = Device::cpu();
  // The type of every parameter, buffer and activation. F32 everywhere; F64 on the CPU only (the reference
  // kernels' double instantiation), which is what the whole-model gradient checks run in.
  DType dtype = DType::F32;
  void* stream = nullptr;  // cudaStream_t of the CUDA device; ignored on the CPU
  // Not owned. Required on a CUDA device (Conv2d and Linear call cuDNN/cuBLAS through it); bound to `stream`
  // before every library call. Its own options (allow_tf32, deterministic algorithms) decide the math.
  engine::cuda::CudaHandles* handles = nullptr;
  // Dropout masks are philox(dropout_seed, offset, i). Every training-mode Dropout forward takes the next
  // offset (dropout_offset++), so every call of every step draws a new mask, and the sequence is a pure
  // function of (seed, number of calls): the same on every run, and saved in a checkpoint as two integers.
  std::uint64_t dropout_seed = 0;
  std::uint64_t dropout_offset = 0;
  // A CUDA graph's step (apps/train/step_state.h): when set, a device address holding the step's first
  // dropout offset, and dropout_step_base the host's dropout_offset when that step began. A Dropout forward
  // then draws with offset *dropout_offset_device + (its dropout_offset - dropout_step_base): the eager
  // value, read where a replay of the captured step finds the next step's.
  const std::uint64_t* dropout_offset_device = nullptr;
  std::uint64_t dropout_step_base = 0;
  // Let cuDNN convolutions / cuBLAS GEMMs use TF32 tensor cores for fp32 math (PyTorch's
  // torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32). The handles carry the math
  // mode; Model::finalize refuses a context whose handles disagree with these flags, so they say what runs.
  bool allow_tf32 = false;
  bool allow_tf32_matmul = false;
  // bf16 autocast at Conv2d and Linear (--precision bf16, PyTorch's torch.autocast(dtype=torch.bfloat16)):
  // their input, weight and bias are rounded to bf16 (the weight read from the model's bf16 mirror of the
  // flat parameter buffer), products accumulate in fp32 (bf16 tensor-core GEMMs on CUDA), outputs and
  // gradients are rounded to bf16 (kernels/ops/autocast_bf16.h). Activations between the layers are BF16
  // tensors (kernels/ops/bf16_storage.h); parameters, gradients, BatchNorm statistics and the loss stay fp32.
  // float32 contexts, NCHW, cuDNN convolutions only.
  bool autocast_bf16 = false;
  ConvAlgorithm conv_algorithm = ConvAlgorithm::Cudnn;
  // The memory order of the model's 4-d activations (core/layout.h; --layout). Layers allocate them in it
  // (Layer::new_tensor) and refuse inputs in another; the Model converts an NCHW input at its entry, and
  // Flatten hands Linear PyTorch's NCHW feature order. Parameters are [K, C, R, S] whatever the layout.
  Layout layout = Layout::NCHW;
};

}  // namespace engine
