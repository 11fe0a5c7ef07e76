#pragma once
// CudaHandles: the RAII owner of one cuDNN handle and one cuBLAS handle, bound to a device, plus the math
// mode every library call made through them uses.
//
// fp32 means fp32. By default (allow_tf32 = allow_tf32_matmul = false) no tensor-core TF32 path is used:
//   cuBLAS: CUBLAS_DEFAULT_MATH (cuBLAS uses TF32 only when CUBLAS_TF32_TENSOR_OP_MATH is set or the
//           compute type is CUBLAS_COMPUTE_32F_FAST_TF32); our GEMMs also pass CUBLAS_COMPUTE_32F
//           explicitly, so the choice does not hang on one flag alone. Always with
//           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: a bf16-output GEMM (linear.h's bf16 y and dx)
//           accumulates in fp32 to the end and is rounded once, as its contract and the CPU emulation say
//           (cuBLAS's default may add split-K partials in the output type, bf16; PyTorch's
//           allow_bf16_reduced_precision_reduction).
//   cuDNN:  CUDNN_FMA_MATH on every convolution descriptor (FMA kernels only: no TF32 tensor-core kernel),
//           and algorithms cuDNN reports with another math type are skipped.
// The two switches are PyTorch's: allow_tf32 is torch.backends.cudnn.allow_tf32 (convolutions: cuDNN gets
// CUDNN_DEFAULT_MATH, which permits TF32 tensor cores for fp32 data), allow_tf32_matmul is
// torch.backends.cuda.matmul.allow_tf32 (cuBLAS gets CUBLAS_TF32_TENSOR_OP_MATH with
// CUBLAS_COMPUTE_32F_FAST_TF32). Expect ~1e-3 relative error where TF32 runs. cnn_train's default
// (--precision tf32) is PyTorch's default: TF32 convolutions, fp32 matmul.
// Note: the environment variable NVIDIA_TF32_OVERRIDE=1 could force TF32 behind our back; =0 forbids it.
//
// The handles are also where the per-shape convolution plans live (descriptors, chosen algorithms,
// workspace sizes: conv2d_cudnn.h), because the best algorithm depends on the device and the math mode.
//
// Streams: every library-backed op takes an explicit cudaStream_t; bind(stream) points both handles at it
// (a no-op when it already is). One CudaHandles per host thread: cuDNN/cuBLAS handles are not meant to be
// driven from two threads at once.
//
// cuBLAS workspace: given from engine's caching allocator (cublasSetWorkspace) at construction, so cuBLAS
// never calls cudaMalloc during a step. The block is tagged with the construction stream; binding the
// handles to another stream is safe only when work on the old stream is ordered before (an event or a
// synchronize), as for any block in this allocator.

#include <cstddef>
#include <memory>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "core/tensor.h"

namespace engine::cuda {

namespace detail {
struct CudnnConvPlans;  // kernels/cuda/conv2d_cudnn_plan.h
}

// How cuDNN convolution algorithms are chosen, once per shape.
enum class ConvAlgoSearch {
  Heuristic,  // cudnnGet*Algorithm_v7: cuDNN's ranked guess, no trial runs, the same every run
  Benchmark,  // cudnnFind*AlgorithmEx: times the candidates once on the real buffers (PyTorch's benchmark)
};

struct CudaHandlesOptions {
  bool allow_tf32 = false;         // cuDNN convolutions may use TF32 tensor cores
  bool allow_tf32_matmul = false;  // cuBLAS GEMMs (Linear) may use TF32 tensor cores
  ConvAlgoSearch conv_search = ConvAlgoSearch::Heuristic;
  // Only algorithms cuDNN marks CUDNN_DETERMINISTIC for backward data / backward filter: two runs on the
  // same inputs give the same bits.
  bool deterministic = true;
  std::size_t max_conv_workspace_bytes = std::size_t{512} << 20;
  std::size_t cublas_workspace_bytes = std::size_t{32} << 20;  // NVIDIA's recommendation for Hopper
};

// The one algorithm-selection policy of a training run, shared by cnn_train and train_bench so that the
// benchmark times what the program runs: cudnnFind (benchmark search, PyTorch's cudnn.benchmark) over every
// algorithm by default; with `deterministic`, cuDNN's heuristic ranking restricted to deterministic backward
// algorithms, so two runs give the same bits.
CudaHandlesOptions training_handles_options(bool deterministic, bool allow_tf32 = false,
                                            bool allow_tf32_matmul = false);

class CudaHandles {
 public:
  // Creates the handles on `device` (the calling thread's current device is restored afterwards) and binds
  // them to `stream`.
  CudaHandles(int device, cudaStream_t stream, const CudaHandlesOptions& options = {});
  ~CudaHandles();
  CudaHandles(const CudaHandles&) = delete;
  CudaHandles& operator=(const CudaHandles&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  bool allow_tf32() const { return options_.allow_tf32; }
  bool allow_tf32_matmul() const { return options_.allow_tf32_matmul; }
  const CudaHandlesOptions& options() const { return options_; }

  // Points both handles at `stream` (cudnnSetStream / cublasSetStream) when they are elsewhere, and then
  // checks that the calling thread's current device is this handle's device (a call on the bound stream
  // costs one comparison). Returns *this.
  CudaHandles& bind(cudaStream_t stream);

  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas() const { return cublas_; }
  // float32 convolutions' math type: cudnn_search_math_type(CUDNN_DATA_FLOAT, allow_tf32()).
  cudnnMathType_t cudnn_math_type() const;
  // CUBLAS_COMPUTE_32F, or CUBLAS_COMPUTE_32F_FAST_TF32 when TF32 is allowed for matmul.
  cublasComputeType_t cublas_compute_type() const;

  detail::CudnnConvPlans& conv_plans() { return *conv_plans_; }

 private:
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  CudaHandlesOptions options_;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  Tensor cublas_workspace_;
  std::unique_ptr<detail::CudnnConvPlans> conv_plans_;
};

// The cuBLAS math mode the handles set: CUBLAS_DEFAULT_MATH, or CUBLAS_TF32_TENSOR_OP_MATH when TF32 is
// allowed for matmul, each with CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION (see above).
cublasMath_t cublas_math_mode(bool allow_tf32_matmul);

// The math type a convolution's algorithm search runs with (set on the cuDNN convolution descriptor before
// cudnnFind*). float32: CUDNN_FMA_MATH, or CUDNN_DEFAULT_MATH when TF32 is allowed. bfloat16:
// CUDNN_TENSOR_OP_MATH, whatever allow_tf32 says: cuDNN's legacy API runs tensor-core kernels only when the
// descriptor asks for tensor-op math, and cudnnFind*Ex tries only that type and the default one, so a
// DEFAULT search would offer bf16 data FMA kernels alone (PyTorch sets TENSOR_OP for reduced precision too).
cudnnMathType_t cudnn_search_math_type(cudnnDataType_t data_type, bool allow_tf32);

// The calling thread's current CUDA device (cudaGetDevice), for workspaces taken from the allocator.
int current_device();

}  // namespace engine::cuda
