// --tta's plan (which views, with what weights) and its running weighted mean of logits
// (apps/train/test_time_augmentation.h), checked against the weighted mean computed directly in double.

#include "apps/train/test_time_augmentation.h"

#include <cmath>
#include <cstddef>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace engine::apps {
namespace {

double total_weight(const TtaPlan& plan) {
  double total = plan.plain_weight;
  for (const TtaView& v : plan.views) total += v.weight;
  return total;
}

TEST(TtaPlan, LevelsHaveAirbenchsViewsAndWeights) {
  const TtaPlan none = tta_plan(0);
  EXPECT_EQ(none.views.size(), 0u);
  EXPECT_EQ(none.plain_weight, 1.0);

  const TtaPlan mirror = tta_plan(1);
  ASSERT_EQ(mirror.views.size(), 1u);
  EXPECT_EQ(mirror.plain_weight, 0.5);
  EXPECT_TRUE(mirror.views[0].flip);
  EXPECT_EQ(mirror.views[0].dx, 1);  // (1, 1): the unshifted window of the image padded by one
  EXPECT_EQ(mirror.views[0].dy, 1);
  EXPECT_EQ(mirror.views[0].weight, 0.5);

  const TtaPlan full = tta_plan(2);
  ASSERT_EQ(full.views.size(), 5u);
  EXPECT_EQ(full.plain_weight, 0.25);
  EXPECT_EQ(total_weight(full), 1.0);  // sums of powers of two: exact
  // Six distinct views: the plain image (1, 1, no flip) and five others, the shifted ones at 1/8.
  std::set<std::tuple<int, int, bool>> seen = {{1, 1, false}};
  for (const TtaView& v : full.views) {
    EXPECT_TRUE(seen.insert({v.dx, v.dy, v.flip}).second) << v.dx << "," << v.dy << "," << v.flip;
    EXPECT_EQ(v.weight, v.dx == 1 ? 0.25 : 0.125);
  }
  EXPECT_TRUE(seen.count({0, 0, false}) && seen.count({0, 0, true}) && seen.count({2, 2, false}) &&
              seen.count({2, 2, true}));
}

TEST(TtaPlan, OtherLevelsAreRefusedNamingTheFlag) {
  for (const int level : {-1, 3}) {
    try {
      (void)tta_plan(level);
      ADD_FAILURE() << "level " << level << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--tta"), std::string::npos) << e.what();
    }
  }
}

// Each plan's running mean over random per-view logits equals sum_v w_v x_v / sum_v w_v. In float64 the
// running form differs from the direct sum by a few rounding errors per view (6 views: well under 1e-14
// relative to values of order 1); in float32 by a few float32 ulps per view, so 6 views * 4 * 2^-24 < 2e-6.
TEST(WeightedViewMean, EqualsTheDirectWeightedMeanForEveryLevel) {
  for (const DType dtype : {DType::F64, DType::F32}) {
    ExecutionContext ctx;
    ctx.dtype = dtype;
    const double tolerance = dtype == DType::F64 ? 1e-14 : 2e-6;
    std::vector<double> level_means;
    for (const int level : {1, 2}) {
      const TtaPlan plan = tta_plan(level);
      std::mt19937 gen(static_cast<unsigned>(17 + level));
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      const std::size_t n = 3 * 7;  // a batch of 3, 7 classes
      std::vector<std::vector<double>> views(plan.views.size() + 1, std::vector<double>(n));
      for (auto& v : views) {
        for (double& x : v) x = u(gen);
      }
      const auto tensor = [&](const std::vector<double>& v) {
        Tensor t = Tensor::empty({3, 7}, dtype);
        for (std::size_t i = 0; i < n; ++i) {
          if (dtype == DType::F64) {
            t.data<double>()[i] = v[i];
          } else {
            t.data<float>()[i] = static_cast<float>(v[i]);
          }
        }
        return t;
      };
      WeightedViewMean mean(ctx, tensor(views[0]), plan.plain_weight);
      for (std::size_t v = 0; v < plan.views.size(); ++v)
        mean.add(tensor(views[v + 1]), plan.views[v].weight);
      double sum_of_means = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        // The inputs as the tensors hold them (rounded to float32 in the float32 case).
        const auto held = [&](double x) {
          return dtype == DType::F64 ? x : static_cast<double>(static_cast<float>(x));
        };
        double expected = plan.plain_weight * held(views[0][i]);
        for (std::size_t v = 0; v < plan.views.size(); ++v)
          expected += plan.views[v].weight * held(views[v + 1][i]);
        expected /= total_weight(plan);
        const double got = dtype == DType::F64 ? mean.mean().data<double>()[i]
                                               : static_cast<double>(mean.mean().data<float>()[i]);
        EXPECT_NEAR(got, expected, tolerance) << dtype_name(dtype) << " level " << level << " element " << i;
        sum_of_means += got;
      }
      level_means.push_back(sum_of_means);
    }
    // Level 2 averages other views with other weights than level 1: the result moves.
    EXPECT_GT(std::abs(level_means[0] - level_means[1]), 1e-3);
  }
}

TEST(WeightedViewMean, RefusesMismatchedLogitsAndNonPositiveWeights) {
  ExecutionContext ctx;
  const Tensor first = Tensor::zeros({2, 3}, DType::F32);
  EXPECT_THROW(WeightedViewMean(ctx, first, 0.0), Error);
  WeightedViewMean mean(ctx, first, 0.5);
  EXPECT_THROW(mean.add(Tensor::zeros({2, 4}, DType::F32), 0.5), Error);
  EXPECT_THROW(mean.add(Tensor::zeros({2, 3}, DType::F32), -1.0), Error);
}

}  // namespace
}  // namespace engine::apps
