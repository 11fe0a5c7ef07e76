// CudaHandles: creation on the right device, the math modes, stream binding (see handles.h for why).
#include "kernels/cuda/handles.h"

#include "core/cuda_check.h"
#include "core/device_guard.h"
#include "core/error.h"
#include "kernels/cuda/conv2d_cudnn_plan.h"

namespace engine::cuda {

int current_device() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

CudaHandlesOptions training_handles_options(bool deterministic, bool allow_tf32, bool allow_tf32_matmul) {
  CudaHandlesOptions o;
  o.allow_tf32 = allow_tf32;
  o.allow_tf32_matmul = allow_tf32_matmul;
  o.conv_search = deterministic ? ConvAlgoSearch::Heuristic : ConvAlgoSearch::Benchmark;
  o.deterministic = deterministic;
  return o;
}

CudaHandles::CudaHandles(int device, cudaStream_t stream, const CudaHandlesOptions& options)
    : device_(device),
      stream_(stream),
      options_(options),
      conv_plans_(std::make_unique<detail::CudnnConvPlans>()) {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  ENGINE_CHECK(device >= 0 && device < count, "CudaHandles: device {} does not exist ({} visible)", device,
               count);
  DeviceGuard guard(device);
  CUDNN_CHECK(cudnnCreate(&cudnn_));
  try {
    CUBLAS_CHECK(cublasCreate(&cublas_));
    CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    CUBLAS_CHECK(cublasSetMathMode(cublas_, cublas_math_mode(options_.allow_tf32_matmul)));
    if (options_.cublas_workspace_bytes > 0) {
      cublas_workspace_ = Tensor::empty({static_cast<std::int64_t>(options_.cublas_workspace_bytes)},
                                        DType::U8, Device::cuda(device), stream_);
      CUBLAS_CHECK(
          cublasSetWorkspace(cublas_, cublas_workspace_.raw_data(), options_.cublas_workspace_bytes));
    }
  } catch (...) {
    if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
    (void)cudnnDestroy(cudnn_);
    throw;
  }
}

CudaHandles::~CudaHandles() {
  // No throwing here: errors while tearing down are ignored (the device may already be gone at exit).
  DeviceGuard guard(device_, std::nothrow);
  (void)cublasDestroy(cublas_);
  (void)cudnnDestroy(cudnn_);
}

CudaHandles& CudaHandles::bind(cudaStream_t stream) {
  // Every conv and GEMM comes through here: the device is checked only when the stream changes (once per
  // stream in a run), not with a cudaGetDevice per call.
  if (stream != stream_) {
    const int device = current_device();
    ENGINE_CHECK(device == device_, "CudaHandles of device {} used while device {} is current", device_,
                 device);
    CUDNN_CHECK(cudnnSetStream(cudnn_, stream));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream));
    // cublasSetStream resets the handle to cuBLAS's own workspace pool: give ours back.
    if (cublas_workspace_.defined()) {
      CUBLAS_CHECK(
          cublasSetWorkspace(cublas_, cublas_workspace_.raw_data(), options_.cublas_workspace_bytes));
    }
    stream_ = stream;
  }
  return *this;
}

cublasMath_t cublas_math_mode(bool allow_tf32_matmul) {
  // CUBLAS_DEFAULT_MATH never uses TF32 by itself; TF32 needs CUBLAS_TF32_TENSOR_OP_MATH (or a FAST_TF32
  // compute type, which our GEMMs pass only when allow_tf32 is set). Without the DISALLOW flag cuBLAS may add
  // split-K partial sums in the output type: a bf16 y or dx would be rounded once per partial, not once.
  const int mode = allow_tf32_matmul ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
  return static_cast<cublasMath_t>(mode | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
}

cudnnMathType_t cudnn_search_math_type(cudnnDataType_t data_type, bool allow_tf32) {
  // bf16 products are exact in the fp32 accumulator: tensor-op math loses nothing, so it is always asked for
  // (conversion math stays refused by conv2d_cudnn.cpp's filter of the candidates).
  if (data_type == CUDNN_DATA_BFLOAT16) return CUDNN_TENSOR_OP_MATH;
  // CUDNN_FMA_MATH: FMA kernels only, so no TF32 tensor-core kernel for fp32 data. CUDNN_DEFAULT_MATH
  // permits TF32 on Ampere and later.
  return allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

cudnnMathType_t CudaHandles::cudnn_math_type() const {
  return cudnn_search_math_type(CUDNN_DATA_FLOAT, options_.allow_tf32);
}

cublasComputeType_t CudaHandles::cublas_compute_type() const {
  return options_.allow_tf32_matmul ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

}  // namespace engine::cuda
