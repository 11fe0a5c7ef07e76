#pragma once
// --tta (airbench94's test-time augmentation): which views of each test image are evaluated, with what
// weights, and their weighted mean of logits.
//   level 1: the image and its mirror, 1/2 each;
//   level 2: the image and its mirror (1/4 each), and the image shifted one pixel up-left and down-right
//            (reflection padding), each plain and mirrored (1/8 each).

#include <cstdint>
#include <vector>

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::apps {

// A view after the plain image: data::TransformConfig::view's window origin (dx, dy) in the image padded by
// one pixel ((1, 1) is the image itself), whether it is mirrored, and its weight.
struct TtaView {
  std::int32_t dx = 1;
  std::int32_t dy = 1;
  bool flip = false;
  double weight = 0.0;
};

struct TtaPlan {
  double plain_weight = 1.0;   // the plain image's (the model's ordinary evaluation)
  std::vector<TtaView> views;  // the others, in evaluation order; all weights sum to 1
};

// Level 0 is the plain image alone. Throws engine::Error naming --tta for another level.
TtaPlan tta_plan(int level);

// The running weighted mean of the views' logits: after views of total weight W, adding one of weight w is
// mean += (w / (W + w)) * (v - mean), the weight average's kernel (optim::accumulate_average) with
// rho = 1 - w / (W + w). Queued on the context's stream on CUDA.
class WeightedViewMean {
 public:
  WeightedViewMean(const ExecutionContext& ctx, const Tensor& first, double weight);
  void add(const Tensor& logits, double weight);
  const Tensor& mean() const { return mean_; }

 private:
  const ExecutionContext& ctx_;
  Tensor mean_;
  double total_;
};

}  // namespace engine::apps
