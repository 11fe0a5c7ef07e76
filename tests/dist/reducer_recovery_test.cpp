// The Reducer after a backward that failed in the middle (label cpu): an error thrown from its grad-ready
// hook after earlier buckets were queued, which is what a CUDA graph capture that ends inside the step looks
// like to it. Reducer::abandon_step() must leave a Reducer that the next step can use, with the gradients of
// a model that never failed.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "dist/reducer.h"
#include "dist/single_process_group.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/common/error_of.h"
#include "tests/dist/dist_test_models.h"

namespace engine::dist {
namespace {

using engine::testing::error_of;

// A group of one whose all_reduce_async throws once, at call `fail_at` (counted from 1).
class FailingOnceGroup final : public ProcessGroup {
 public:
  FailingOnceGroup(ProcessGroup& inner, int fail_at)
      : ProcessGroup(inner.rank(), inner.world_size(), inner.timeout()), inner_(inner), fail_at_(fail_at) {}
  Backend backend_kind() const override { return inner_.backend_kind(); }
  std::unique_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op, void* stream) override {
    if (++calls_ == fail_at_) ENGINE_FAIL("injected failure of all-reduce {}", calls_);
    return inner_.all_reduce_async(tensor, op, stream);
  }
  std::unique_ptr<Work> broadcast_async(const Tensor& tensor, int root, void* stream) override {
    return inner_.broadcast_async(tensor, root, stream);
  }
  std::unique_ptr<Work> all_gather_async(const Tensor& input, const Tensor& output, void* stream) override {
    return inner_.all_gather_async(input, output, stream);
  }
  void barrier() override { inner_.barrier(); }
  void synchronize(void* stream) override { inner_.synchronize(stream); }

 private:
  ProcessGroup& inner_;
  int fail_at_;
  int calls_ = 0;
};

TEST(DistReducer, AStepThatFailedMidBackwardLeavesAReducerTheNextStepCanUse) {
  auto single = make_single_process_group();
  FailingOnceGroup group(*single, /*fail_at=*/2);  // the second bucket's all-reduce: one is queued already
  layers::Model model = testing::build_test_model("plain", nullptr);
  layers::Model reference = testing::build_test_model("plain", nullptr);  // the same weights, no reducer
  ReducerOptions ro;  // float64 "plain" in several buckets
  ro.first_bucket_mb = 0.1 / 1024.0;
  ro.bucket_mb = 1.0 / 1024.0;
  Reducer reducer(group, model, ro);
  ASSERT_GE(reducer.buckets().size(), 3u);
  layers::SoftmaxCrossEntropy loss, reference_loss;
  const auto backward = [&](layers::Model& m, layers::SoftmaxCrossEntropy& l) {
    l.forward(m.context(), m.forward(testing::make_inputs(0, 4, 7), layers::Mode::Train),
              testing::make_labels(0, 4, 7));
    m.backward(l.backward());
  };

  reducer.set_sync(true);
  const std::string failure = error_of([&] { backward(model, loss); });
  ASSERT_NE(failure.find("injected failure of all-reduce 2"), std::string::npos) << failure;
  // What the eager retry after a failed capture met before abandon_step existed.
  EXPECT_NE(error_of([&] { reducer.set_sync(true); }).find("in the middle of a backward"), std::string::npos);

  EXPECT_TRUE(reducer.abandon_step());
  EXPECT_EQ(error_of([&] { reducer.set_sync(true); }), "(no error)");
  EXPECT_EQ(error_of([&] {
              backward(model, loss);
              reducer.finish();
            }),
            "(no error)");
  backward(reference, reference_loss);  // a world of one averages nothing: the plain gradients
  EXPECT_EQ(model.flat_gradients().to_vector<double>(), reference.flat_gradients().to_vector<double>());
  EXPECT_EQ(reducer.allreduce_count(), static_cast<std::int64_t>(1 + reducer.buckets().size()));
}

}  // namespace
}  // namespace engine::dist
