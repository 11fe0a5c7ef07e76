// CudaHandles: the math modes (fp32 means fp32 unless TF32 is asked for; no reduced-precision split-K
// reductions, so a bf16-output GEMM is rounded once), stream binding, device checks.
#include <gtest/gtest.h>

#include "core/cuda_check.h"
#include "core/stream.h"
#include "kernels/cuda/handles.h"
#include "tests/common/gpu.h"

namespace engine {
namespace {

// The cuBLAS math mode `base` with reductions kept in the compute type (kernels/cuda/handles.h).
cublasMath_t no_reduced_precision(cublasMath_t base) {
  return static_cast<cublasMath_t>(base | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
}

// The mode itself needs no device: both settings keep split-K reductions in fp32.
TEST(CudaHandles, MathModeNeverReducesInTheOutputType) {
  for (const bool tf32 : {false, true}) {
    const int mode = cuda::cublas_math_mode(tf32);
    EXPECT_NE(mode & CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, 0) << "allow_tf32_matmul=" << tf32;
    EXPECT_EQ(mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION,
              tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  }
}

// bf16 convolutions are searched with tensor-op math whatever TF32 says (cuDNN's legacy API offers its
// tensor-core kernels only then); float32 ones with FMA math unless TF32 is allowed. No device needed.
TEST(CudaHandles, ConvolutionSearchesAskForTensorOpMathForBf16) {
  for (const bool tf32 : {false, true}) {
    EXPECT_EQ(cuda::cudnn_search_math_type(CUDNN_DATA_BFLOAT16, tf32), CUDNN_TENSOR_OP_MATH) << tf32;
    EXPECT_EQ(cuda::cudnn_search_math_type(CUDNN_DATA_FLOAT, tf32),
              tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
  }
}

TEST(CudaHandles, Fp32ByDefaultAndTf32OnlyWhenAllowed) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  {
    cuda::CudaHandles handles(0, stream.get());
    cublasMath_t mode{};
    CUBLAS_CHECK(cublasGetMathMode(handles.cublas(), &mode));
    EXPECT_EQ(mode, no_reduced_precision(CUBLAS_DEFAULT_MATH));
    EXPECT_EQ(handles.cublas_compute_type(), CUBLAS_COMPUTE_32F);
    EXPECT_EQ(handles.cudnn_math_type(), CUDNN_FMA_MATH);
    EXPECT_FALSE(handles.allow_tf32());
    EXPECT_FALSE(handles.allow_tf32_matmul());
  }
  {
    // PyTorch's default (cnn_train --precision tf32): TF32 convolutions, fp32 GEMMs.
    cuda::CudaHandlesOptions options;
    options.allow_tf32 = true;
    cuda::CudaHandles handles(0, stream.get(), options);
    cublasMath_t mode{};
    CUBLAS_CHECK(cublasGetMathMode(handles.cublas(), &mode));
    EXPECT_EQ(mode, no_reduced_precision(CUBLAS_DEFAULT_MATH));
    EXPECT_EQ(handles.cublas_compute_type(), CUBLAS_COMPUTE_32F);
    EXPECT_EQ(handles.cudnn_math_type(), CUDNN_DEFAULT_MATH);
  }
  cuda::CudaHandlesOptions options;
  options.allow_tf32_matmul = true;
  cuda::CudaHandles handles(0, stream.get(), options);
  cublasMath_t mode{};
  CUBLAS_CHECK(cublasGetMathMode(handles.cublas(), &mode));
  EXPECT_EQ(mode, no_reduced_precision(CUBLAS_TF32_TENSOR_OP_MATH));
  EXPECT_EQ(handles.cublas_compute_type(), CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(handles.cudnn_math_type(), CUDNN_FMA_MATH);
}

TEST(CudaHandles, BindPointsBothLibrariesAtTheStream) {
  SKIP_WITHOUT_GPU();
  Stream first(0), second(0);
  cuda::CudaHandles handles(0, first.get());
  cudaStream_t got = nullptr;
  CUBLAS_CHECK(cublasGetStream(handles.cublas(), &got));
  EXPECT_EQ(got, first.get());
  CUDA_CHECK(cudaStreamSynchronize(first.get()));  // the workspace's first stream is idle: rebinding is safe
  handles.bind(second.get());
  EXPECT_EQ(handles.stream(), second.get());
  CUBLAS_CHECK(cublasGetStream(handles.cublas(), &got));
  EXPECT_EQ(got, second.get());
  CUDNN_CHECK(cudnnGetStream(handles.cudnn(), &got));
  EXPECT_EQ(got, second.get());
}

TEST(CudaHandles, ADeviceThatDoesNotExistThrows) {
  SKIP_WITHOUT_GPU();
  EXPECT_THROW(cuda::CudaHandles(1000, nullptr), Error);
  EXPECT_THROW(cuda::CudaHandles(-1, nullptr), Error);
}

}  // namespace
}  // namespace engine
