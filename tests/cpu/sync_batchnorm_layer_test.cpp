// SyncBatchNorm2d is BatchNorm2d with an all-reduced statistics step (issue 16): the same checks, and in a
// world of one the same outputs and gradients in every mode, the eval-mode backward included (the fork it
// replaced skipped the eps/momentum checks and refused that backward).

#include "dist/sync_batchnorm_layer.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dist/single_process_group.h"
#include "layers/batchnorm2d.h"
#include "layers/model.h"
#include "layers/sequential.h"
#include "tests/common/error_of.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::dist {
namespace {

using layers::Mode;
using layers::Model;
using layers::testing::cpu_context;
using layers::testing::host_values;
using layers::testing::random_tensor;

TEST(SyncBatchNormLayer, RefusesWhatBatchNorm2dRefuses) {
  auto pg = make_single_process_group();
  EXPECT_NE(testing::error_of([&] { SyncBatchNorm2d bn(*pg, 4, -1.0); }).find("eps must be positive"),
            std::string::npos);
  EXPECT_NE(
      testing::error_of([&] { SyncBatchNorm2d bn(*pg, 4, 1e-5, 1.5); }).find("momentum must be in [0, 1]"),
      std::string::npos);
}

struct Net {
  Model model;
  explicit Net(std::unique_ptr<layers::Layer> bn)
      : model("bn",
              [&] {
                auto s = std::make_unique<layers::Sequential>();
                s->add(std::move(bn));
                return s;
              }(),
              {3, 5, 4}) {
    model.finalize(cpu_context(DType::F64), 3);
    model.set_needs_input_grad(true);
  }
};

// Every value and gradient of the two layers agree exactly: in a world of one the all-gathered statistics are
// the local ones, and every other step is the same code.
TEST(SyncBatchNormLayer, InAWorldOfOneEqualsBatchNorm2dInEveryModeEvalBackwardIncluded) {
  auto pg = make_single_process_group();
  Net plain(std::make_unique<layers::BatchNorm2d>(3));
  Net sync(std::make_unique<SyncBatchNorm2d>(*pg, 3));
  const Tensor x = random_tensor({2, 3, 5, 4}, DType::F64, 21);
  const Tensor dy = random_tensor({2, 3, 5, 4}, DType::F64, 22);
  for (Mode mode : {Mode::Train, Mode::Eval}) {
    const Tensor y0 = plain.model.forward(x, mode), y1 = sync.model.forward(x, mode);
    const Tensor dx0 = plain.model.backward(dy), dx1 = sync.model.backward(dy);
    const std::vector<double> a = host_values(y0), b = host_values(y1), da = host_values(dx0),
                              db = host_values(dx1);
    for (std::size_t i = 0; i < a.size(); ++i) {
      // Chan's combination of one rank's (count, mean, M2) and the single-process sums round differently:
      // a few ulps of double.
      EXPECT_NEAR(a[i], b[i], 1e-12) << "y " << i;
      EXPECT_NEAR(da[i], db[i], 1e-12) << "dx " << i;
    }
    const std::vector<double> g0 = host_values(plain.model.flat_gradients()),
                              g1 = host_values(sync.model.flat_gradients());
    for (std::size_t i = 0; i < g0.size(); ++i) EXPECT_NEAR(g0[i], g1[i], 1e-12) << "grad " << i;
  }
}

}  // namespace
}  // namespace engine::dist
