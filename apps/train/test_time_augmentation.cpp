#include "apps/train/test_time_augmentation.h"

#include "core/error.h"
#include "optim/ema.h"

namespace engine::apps {

TtaPlan tta_plan(int level) {
  ENGINE_CHECK(level >= 0 && level <= 2, "--tta: the level must be 0, 1 or 2, got {}", level);
  TtaPlan plan;
  if (level == 0) return plan;
  plan.plain_weight = level == 1 ? 0.5 : 0.25;
  plan.views.push_back({.dx = 1, .dy = 1, .flip = true, .weight = plan.plain_weight});
  if (level == 2) {
    for (const std::int32_t shift : {0, 2}) {
      plan.views.push_back({.dx = shift, .dy = shift, .flip = false, .weight = 0.125});
      plan.views.push_back({.dx = shift, .dy = shift, .flip = true, .weight = 0.125});
    }
  }
  return plan;
}

WeightedViewMean::WeightedViewMean(const ExecutionContext& ctx, const Tensor& first, double weight)
    : ctx_(ctx), total_(weight) {
  ENGINE_CHECK(weight > 0.0, "WeightedViewMean: the first view's weight must be positive, got {}", weight);
  mean_ = Tensor::empty(first.shape(), first.dtype(), first.device(), ctx.stream);
  mean_.copy_from(first, ctx.stream);
}

void WeightedViewMean::add(const Tensor& logits, double weight) {
  ENGINE_CHECK(weight > 0.0, "WeightedViewMean: a view's weight must be positive, got {}", weight);
  ENGINE_CHECK(logits.shape() == mean_.shape(),
               "WeightedViewMean: a view's logits {} differ from the first's {}", shape_str(logits.shape()),
               shape_str(mean_.shape()));
  total_ += weight;
  optim::accumulate_average(ctx_, mean_, logits, 1.0 - weight / total_);
}

}  // namespace engine::apps
