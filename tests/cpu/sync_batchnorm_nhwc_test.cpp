// SyncBatchNorm2d's statistics (dist/sync_batchnorm.cpp) walk NCHW planes; an NHWC model (--layout nhwc
// with --sync-bn) is refused with a message naming the layout and the flag, not computed wrongly.

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "dist/single_process_group.h"
#include "dist/sync_batchnorm_layer.h"
#include "layers/model.h"
#include "layers/sequential.h"
#include "tests/common/error_of.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::dist {
namespace {

TEST(SyncBatchNormNhwc, IsRefusedNamingTheLayoutAndTheFlag) {
  auto pg = make_single_process_group();
  auto net = std::make_unique<layers::Sequential>();
  net->add(std::make_unique<SyncBatchNorm2d>(*pg, 3));
  layers::Model model("bn", std::move(net), {3, 5, 4});
  ExecutionContext ctx = layers::testing::cpu_context(DType::F64);
  ctx.layout = Layout::NHWC;
  model.finalize(ctx, 3);
  const Tensor x = layers::testing::random_tensor({2, 3, 5, 4}, DType::F64, 21);
  const std::string e = testing::error_of([&] { (void)model.forward(x, layers::Mode::Train); });
  EXPECT_NE(e.find("SyncBatchNorm runs NCHW only"), std::string::npos) << e;
  EXPECT_NE(e.find("--layout nchw"), std::string::npos) << e;
}

}  // namespace
}  // namespace engine::dist
