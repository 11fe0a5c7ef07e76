// What the CUDA device refuses, with or without a GPU present: no silent fallback to the CPU or a copy
// (split from layers_gpu_test.cpp, whose zoo comparisons fill it).

#include <string>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cuda/handles.h"
#include "layers/models.h"
#include "tests/common/gpu.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers {
namespace {

// No silent fallback: what the CUDA device cannot run is refused, whether or not a GPU is present.
TEST(LayersGpu, CudaRefusesFloat64AndMissingHandles) {
  ExecutionContext c;
  c.device = Device::cuda(0);
  c.dtype = DType::F64;
  Model m = build_model("mnist_cnn", 1, 10, 28, 28);
  EXPECT_THROW(m.finalize(c, 1), Error);
  c.dtype = DType::F32;  // but no handles
  Model m2 = build_model("mnist_cnn", 1, 10, 28, 28);
  EXPECT_THROW(m2.finalize(c, 1), Error);
}

// A CPU tensor given to a CUDA model is an error naming the layer, not a copy.
TEST(LayersGpu, WrongDeviceInputIsAnError) {
  SKIP_WITHOUT_GPU();
  set_device(0);
  Stream stream(0);
  cuda::CudaHandles handles(0, stream.get());
  ExecutionContext c;
  c.device = Device::cuda(0);
  c.dtype = DType::F32;
  c.stream = stream.get();
  c.handles = &handles;
  Model m = build_model("mnist_cnn", 1, 10, 28, 28);
  m.finalize(c, 1234);
  try {
    m.forward(testing::random_tensor({1, 1, 28, 28}, DType::F32, 1), Mode::Eval);
    ADD_FAILURE() << "a CPU input ran on a CUDA model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not on the model's device cuda:0"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace engine::layers
