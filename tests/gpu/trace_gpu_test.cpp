// The training trace on a CUDA stream (core/trace.h): spans of work queued on the stream are timed by events
// where it runs, not when the host queued it: a model's forward and backward on the GPU have a span per
// layer, the forward ones inside the root's.

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "core/trace.h"
#include "kernels/cuda/handles.h"
#include "layers/models.h"
#include "tests/common/gpu.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::trace {
namespace {

TEST(TraceGpu, LayerSpansAreTimedOnTheStreamAndNest) {
  SKIP_WITHOUT_GPU();
  set_device(0);
  Stream stream{0};
  cuda::CudaHandles handles(0, stream.get(), {});
  ExecutionContext c;
  c.device = Device::cuda(0);
  c.dtype = DType::F32;
  c.stream = stream.get();
  c.handles = &handles;
  layers::Model m = layers::build_model("cnn3", 3, 10, 32, 32);
  m.finalize(c, 1);
  const Tensor x = layers::testing::random_tensor({8, 3, 32, 32}, DType::F32, 7).to(c.device, stream.get());
  Recorder r(stream.get());
  set_active(&r);
  const Tensor y = m.forward(x, layers::Mode::Train);
  m.backward(layers::testing::random_tensor(y.shape(), DType::F32, 8).to(c.device, stream.get()));
  set_active(nullptr);
  const std::vector<Span> spans = r.spans();
  std::map<std::string, int> forward, backward;
  const Span* root = nullptr;
  for (const Span& s : spans) {
    (s.category == "forward" ? forward : backward)[s.name] += 1;
    EXPECT_GE(s.duration_us, 0.0) << s.name;
    if (s.category == "forward" && (root == nullptr || s.duration_us > root->duration_us)) root = &s;
  }
  EXPECT_GT(forward.size(), 5u);
  EXPECT_EQ(forward.size(), backward.size());
  ASSERT_NE(root, nullptr);
  for (const Span& s : spans) {
    if (s.category == "forward") {
      EXPECT_GE(s.start_us, root->start_us) << s.name;
      EXPECT_LE(s.start_us + s.duration_us, root->start_us + root->duration_us + 1.0) << s.name;
    }
  }
}

}  // namespace
}  // namespace engine::trace
