// The CUDA error path on a machine without a GPU (CI): device_count() answers 0 instead of failing, and a
// failing CUDA call throws engine::Error carrying the file, the line, the expression and CUDA's message.
// On a machine with GPUs the same test makes a call that fails there too (an out-of-range device).
#include <string>

#include <gtest/gtest.h>

#include "core/device.h"
#include "core/error.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "tests/common/error_of.h"

#if ENGINE_HAVE_CUDA
#include "core/cuda_check.h"
#endif

namespace engine {
namespace {

TEST(CudaErrors, DeviceCountIsZeroOrMoreAndNeverThrows) {
  int n = -1;
  EXPECT_NO_THROW(n = device_count());
  EXPECT_GE(n, 0);
  if (!built_with_cuda()) {
    EXPECT_EQ(n, 0);
  }
}

// CPU-only builds declare Stream and Event (so the Reducer holds optional ones without `#if`), but making one
// is refused with a message that says why; a CUDA build without a device fails inside CUDA instead.
TEST(CudaErrors, CpuOnlyBuildRefusesToMakeStreamsAndEvents) {
  if (built_with_cuda()) GTEST_SKIP() << "a CUDA build: Stream and Event are the real ones";
  const std::string stream_error = testing::error_of([] { Stream s(0); });
  EXPECT_NE(stream_error.find("this build has no CUDA"), std::string::npos) << stream_error;
  EXPECT_NE(stream_error.find("device 0"), std::string::npos) << stream_error;
  const std::string event_error = testing::error_of([] { Event e(true); });
  EXPECT_NE(event_error.find("this build has no CUDA"), std::string::npos) << event_error;
}

TEST(CudaErrors, SetDeviceOutOfRangeNamesTheDevice) {
  try {
    set_device(device_count());
    FAIL() << "set_device to a missing device did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

#if ENGINE_HAVE_CUDA
TEST(CudaErrors, FailingCallThrowsWithFileLineExpressionAndMessage) {
  const int bad_device = device_count();  // one past the last: invalid with or without a GPU
  const int expected_line = __LINE__ + 2;
  try {
    CUDA_CHECK(cudaSetDevice(bad_device));
    FAIL() << "CUDA_CHECK did not throw for cudaSetDevice(" << bad_device << ")";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuda_error_test.cpp:" + std::to_string(expected_line)), std::string::npos) << what;
    EXPECT_EQ(e.line(), expected_line);
    EXPECT_NE(what.find("cudaSetDevice(bad_device)"), std::string::npos) << what;
    EXPECT_NE(what.find("CUDA error: "), std::string::npos) << what;
    // No driver: cudaErrorInsufficientDriver or cudaErrorNoDevice; with GPUs: cudaErrorInvalidDevice.
    EXPECT_NE(what.find("(cuda"), std::string::npos) << "the error name is missing: " << what;
  }
}

TEST(CudaErrors, EveryLibraryCheckCarriesItsMessage) {
  EXPECT_THROW(CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED), Error);
  EXPECT_THROW(CUDNN_CHECK(CUDNN_STATUS_BAD_PARAM), Error);
  EXPECT_THROW(NCCL_CHECK(ncclInvalidArgument), Error);
  EXPECT_NO_THROW(CUDA_CHECK(cudaSuccess));
  try {
    CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuBLAS error: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos) << e.what();
  }
  try {
    NCCL_CHECK(ncclInvalidArgument);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL error: "), std::string::npos) << e.what();
  }
}

TEST(CudaErrors, DeviceAllocatorRefusesMissingDevice) {
  EXPECT_THROW((void)Tensor::empty({4}, DType::F32, Device::cuda(device_count())), Error);
}
#else
TEST(CudaErrors, FailingCallThrowsWithFileLineExpressionAndMessage) {
  GTEST_SKIP() << "CPU-only build (ENGINE_WITH_CUDA=OFF): no CUDA calls to check";
}
#endif

}  // namespace
}  // namespace engine
