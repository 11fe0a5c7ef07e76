// SGD with parameter groups (kernels/cpu/sgd.h SgdGroup, optim/param_groups.h): the float64 reference
// against plain steps on each range with the group's settings, a step by hand, frozen ranges bit-identical,
// the fast float path against the reference, bad groups, and groups chosen from a model's names.

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/cpu/sgd.h"
#include "kernels/cpu_fast/sgd.h"
#include "optim/param_groups.h"
#include "optim/sgd.h"
#include "tests/common/gradcheck.h"
#include "tests/cpu/layer_test_util.h"

namespace engine {
namespace {

// Bitwise equality of n values (their bytes: -0 and NaN payloads count).
template <typename T>
bool same_bits(const T* a, const T* b, std::size_t n) {
  using Bytes = std::array<unsigned char, sizeof(T)>;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::bit_cast<Bytes>(a[i]) != std::bit_cast<Bytes>(b[i])) return false;
  }
  return true;
}

constexpr std::int64_t kN = 101;  // odd, with groups of odd sizes and gaps between them

const std::vector<cpu::SgdGroup> kGroups = {
    {.begin = 3, .end = 10, .lr_scale = 64.0, .weight_decay = 0.0},                    // 7 elements
    {.begin = 10, .end = 11, .lr_scale = 1.0, .weight_decay = 0.0, .frozen = true},    // 1, next to the last
    {.begin = 20, .end = 53, .lr_scale = 0.5, .weight_decay = 1e-2},                   // 33
    {.begin = 60, .end = 97, .lr_scale = 1.0, .weight_decay = 5e-4, .frozen = true}};  // 37

TEST(SgdGroups, EachRangeStepsWithItsOwnSettings) {
  const cpu::SgdOptions options[] = {{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true},
                                     {.lr = 0.1, .momentum = 0.0, .weight_decay = 1e-3},
                                     {.lr = 0.02, .momentum = 0.8, .dampening = 0.2, .weight_decay = 1e-4}};
  for (const cpu::SgdOptions& o : options) {
    std::vector<double> p = testing::random_values(kN, 91), buf = testing::random_values(kN, 92);
    std::vector<double> p_ref = p, buf_ref = buf;
    for (int step = 0; step < 3; ++step) {
      const std::vector<double> g = testing::random_values(kN, 93 + static_cast<std::uint64_t>(step));
      const bool first = step == 0;
      cpu::sgd_step_groups<double>(o, kGroups, p.data(), g.data(), buf.data(), kN, first);
      // The oracle: the plain step on each range with the group's lr and weight decay; frozen: nothing.
      const auto plain = [&](std::int64_t b, std::int64_t e, double scale, double wd) {
        cpu::SgdOptions r = o;
        r.lr = o.lr * scale;
        r.weight_decay = wd;
        cpu::sgd_step<double>(r, p_ref.data() + b, g.data() + b, buf_ref.data() + b, e - b, first);
      };
      plain(0, 3, 1.0, o.weight_decay);
      plain(3, 10, 64.0, 0.0);
      plain(11, 20, 1.0, o.weight_decay);
      plain(20, 53, 0.5, 1e-2);
      plain(53, 60, 1.0, o.weight_decay);
      plain(97, kN, 1.0, o.weight_decay);
      // The same double operations on the same values: bitwise equal, frozen ranges included.
      ASSERT_TRUE(same_bits(p.data(), p_ref.data(), kN)) << "step " << step;
      if (o.momentum != 0.0) {
        ASSERT_TRUE(same_bits(buf.data(), buf_ref.data(), kN)) << "step " << step;
      }
    }
  }
}

TEST(SgdGroups, FrozenRangesStayBitIdentical) {
  std::vector<float> p(kN), g(kN), buf(kN);
  for (std::int64_t i = 0; i < kN; ++i) {
    p[i] = 0.5f + 0.01f * static_cast<float>(i);
    g[i] = 1.0f;
    buf[i] = -3.0f;  // a frozen range's momentum must not be written either
  }
  const std::vector<float> p0 = p;
  const cpu::SgdOptions o{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  cpu::sgd_step_groups<float>(o, kGroups, p.data(), g.data(), buf.data(), kN, true);
  std::vector<float> pf = p0, buff(kN, -3.0f);
  cpu_fast::sgd_step_groups(o, kGroups, pf.data(), g.data(), buff.data(), kN, true);
  for (std::int64_t i = 0; i < kN; ++i) {
    const bool frozen = i == 10 || (i >= 60 && i < 97);
    if (frozen) {
      EXPECT_TRUE(same_bits(&p[i], &p0[i], 1)) << i;
      EXPECT_EQ(buf[i], -3.0f) << i;
      EXPECT_TRUE(same_bits(&pf[i], &p0[i], 1)) << "fast " << i;
      EXPECT_EQ(buff[i], -3.0f) << "fast " << i;
    } else {
      EXPECT_NE(p[i], p0[i]) << i;
    }
  }
}

TEST(SgdGroups, KnownValuesByHand) {
  // p = 1, g = 0.5, lr 0.1, no momentum. Group: lr x 64, wd 0.01: p' = 1 - 6.4 * 0.51 = -2.264.
  // Outside: wd 0.1: p' = 1 - 0.1 * 0.6 = 0.94.
  std::vector<double> p = {1.0, 1.0}, g = {0.5, 0.5};
  const std::vector<cpu::SgdGroup> groups = {{.begin = 1, .end = 2, .lr_scale = 64.0, .weight_decay = 0.01}};
  cpu::sgd_step_groups<double>({.lr = 0.1, .weight_decay = 0.1}, groups, p.data(), g.data(), nullptr, 2,
                               true);
  EXPECT_NEAR(p[0], 0.94, 1e-15);
  EXPECT_NEAR(p[1], -2.264, 1e-15);
}

TEST(SgdGroups, FastPathMatchesTheReference) {
  const cpu::SgdOptions o{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true};
  const std::vector<double> p0 = testing::random_values(kN, 95);
  std::vector<float> p(p0.begin(), p0.end()), p_ref = p, buf(kN), buf_ref(kN);
  for (int step = 0; step < 3; ++step) {
    const std::vector<double> gd = testing::random_values(kN, 96 + static_cast<std::uint64_t>(step));
    const std::vector<float> g(gd.begin(), gd.end());
    cpu_fast::sgd_step_groups(o, kGroups, p.data(), g.data(), buf.data(), kN, step == 0);
    cpu::sgd_step_groups<float>(o, kGroups, p_ref.data(), g.data(), buf_ref.data(), kN, step == 0);
    for (std::int64_t i = 0; i < kN; ++i) {
      // |p| <= ~1, |lr * 64 * update| <= ~6: float arithmetic differs from the double-then-round reference by
      // a few float ulps of the terms (2^-24 * 6 * a few), per step.
      EXPECT_NEAR(p[i], p_ref[i], 4e-6) << "step " << step << " element " << i;
      EXPECT_NEAR(buf[i], buf_ref[i], 4e-6) << "step " << step << " element " << i;
    }
    p = p_ref;
    buf = buf_ref;
  }
}

TEST(SgdGroups, BadGroupsAreRefusedByIndex) {
  auto message = [](std::vector<cpu::SgdGroup> groups) {
    try {
      cpu::tile_sgd_groups(groups, 0.0, 10);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{.begin = 4, .end = 8}, {.begin = 6, .end = 9}}).find("group 1"), std::string::npos);
  EXPECT_NE(message({{.begin = 4, .end = 12}}).find("inside [0, 10)"), std::string::npos);
  EXPECT_NE(message({{.begin = 4, .end = 2}}).find("group 0"), std::string::npos);
  EXPECT_NE(message({{.begin = 0, .end = 2, .lr_scale = -1.0}}).find("lr scale"), std::string::npos);
  EXPECT_NE(message({{.begin = 0, .end = 2, .weight_decay = std::nan("")}}).find("weight decay"),
            std::string::npos);
  const std::vector<cpu::SgdGroup> tiles = cpu::tile_sgd_groups(kGroups, 7.0, kN);
  ASSERT_EQ(tiles.size(), 8u);  // 4 groups, and default tiles before, between and after them
  EXPECT_EQ(tiles.front().begin, 0);
  EXPECT_EQ(tiles.back().end, kN);
  for (std::size_t k = 1; k < tiles.size(); ++k) EXPECT_EQ(tiles[k].begin, tiles[k - 1].end);
  EXPECT_EQ(tiles[0].weight_decay, 7.0);
}

TEST(ParamGroups, RulesSelectByKindOrNameAndMergeNeighbours) {
  layers::Model m("small_net", layers::testing::small_test_net(), {3, 8, 8});
  m.finalize(layers::testing::cpu_context(DType::F64), 1);
  const std::vector<optim::ParamGroupRule> rules = {
      optim::parse_param_group_rule("BatchNorm2d.bias:lr=64,wd=0"),
      optim::parse_param_group_rule("0.weight:frozen")};
  const std::vector<cpu::SgdGroup> groups = optim::param_groups_for(m, rules, 5e-4);
  // Every BatchNorm2d bias is in an lr=64 group; the other names containing "0.weight" are frozen; nothing
  // else is in a group.
  for (const layers::Parameter& p : m.parameters()) {
    const cpu::SgdGroup* in = nullptr;
    for (const cpu::SgdGroup& g : groups) {
      if (p.offset >= g.begin && p.offset + p.value.numel() <= g.end) in = &g;
    }
    const bool bn_bias = p.layer->kind() == "BatchNorm2d" && p.name.ends_with(".bias");
    if (bn_bias) {
      ASSERT_NE(in, nullptr) << p.name;
      EXPECT_EQ(in->lr_scale, 64.0) << p.name;
      EXPECT_EQ(in->weight_decay, 0.0) << p.name;
    } else if (p.name.find("0.weight") != std::string::npos) {
      ASSERT_NE(in, nullptr) << p.name;
      EXPECT_TRUE(in->frozen);
    } else {
      EXPECT_EQ(in, nullptr) << p.name;
    }
  }
  // A frozen parameter does not move through optim::Sgd.
  for (const layers::Parameter& p : m.parameters()) {
    std::fill(p.grad.data<double>(), p.grad.data<double>() + p.grad.numel(), 0.25);
  }
  ASSERT_EQ(m.parameters()[0].name, "0.weight");
  ASSERT_EQ(m.parameters()[1].name, "0.bias");
  const std::vector<double> w0 = m.parameters()[0].value.to_vector<double>();
  const std::vector<double> b0 = m.parameters()[1].value.to_vector<double>();
  optim::Sgd sgd(m, optim::SgdConfig{.momentum = 0.9, .weight_decay = 5e-4, .groups = groups});
  sgd.step(0.1);
  EXPECT_EQ(m.parameters()[0].value.to_vector<double>(), w0);
  EXPECT_NE(m.parameters()[1].value.to_vector<double>(), b0);
}

TEST(ParamGroups, BadRulesNameTheText) {
  EXPECT_THROW(optim::parse_param_group_rule("bias"), Error);
  EXPECT_THROW(optim::parse_param_group_rule("bias:lr=abc"), Error);
  EXPECT_THROW(optim::parse_param_group_rule("bias:lr=-1"), Error);
  EXPECT_THROW(optim::parse_param_group_rule("bias:speed=2"), Error);
  const optim::ParamGroupRule r = optim::parse_param_group_rule("features.0.:lr=2,wd=0.5,frozen");
  EXPECT_EQ(r.selector, "features.0.");
  EXPECT_EQ(r.lr_scale, 2.0);
  EXPECT_EQ(r.weight_decay.value(), 0.5);
  EXPECT_TRUE(r.frozen);
  layers::Model m("small_net", layers::testing::small_test_net(), {3, 8, 8});
  m.finalize(layers::testing::cpu_context(DType::F32), 1);
  EXPECT_FALSE(r.epochs.has_value());
  EXPECT_EQ(optim::parse_param_group_rule("0.bias:epochs=3").epochs.value(), 3);
  EXPECT_THROW(optim::parse_param_group_rule("0.bias:epochs=-1"), Error);
  EXPECT_THROW(optim::parse_param_group_rule("0.bias:epochs=2.5"), Error);
  EXPECT_THROW(optim::parse_param_group_rule("0.bias:epochs="), Error);
  const std::vector<optim::ParamGroupRule> typo = {optim::parse_param_group_rule("BatchNorm.bias:lr=64")};
  try {
    optim::param_groups_for(m, typo, 0.0);
    ADD_FAILURE() << "a rule that selects nothing was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("selects no parameter"), std::string::npos) << e.what();
  }
}

// epochs=N: the parameter is updated in epochs 0..N-1 and frozen from epoch N on; Sgd::set_groups switches
// at an epoch boundary and keeps the momentum buffer (a frozen element's momentum is not touched either).
TEST(ParamGroups, EpochLimitedRuleFreezesFromThatEpochOn) {
  layers::Model m("small_net", layers::testing::small_test_net(), {3, 8, 8});
  m.finalize(layers::testing::cpu_context(DType::F64), 1);
  const std::vector<optim::ParamGroupRule> rules = {optim::parse_param_group_rule("0.bias:epochs=2")};
  EXPECT_TRUE(optim::param_groups_change_with_epoch(rules));
  EXPECT_FALSE(optim::param_groups_change_with_epoch(
      std::vector<optim::ParamGroupRule>{optim::parse_param_group_rule("0.bias:frozen")}));
  ASSERT_EQ(m.parameters()[1].name, "0.bias");
  const layers::Parameter& bias = m.parameters()[1];
  const layers::Parameter& weight = m.parameters()[0];
  for (const layers::Parameter& p : m.parameters()) {
    std::fill(p.grad.data<double>(), p.grad.data<double>() + p.grad.numel(), 0.25);
  }
  optim::Sgd sgd(m, optim::SgdConfig{.momentum = 0.9, .groups = optim::param_groups_for(m, rules, 0.0, 0)});
  for (std::int64_t epoch = 0; epoch < 4; ++epoch) {
    sgd.set_groups(optim::param_groups_for(m, rules, 0.0, epoch));
    const std::vector<double> b = bias.value.to_vector<double>(), w = weight.value.to_vector<double>();
    const std::vector<double> mb = sgd.momentum_buffer().to_vector<double>();
    sgd.step(0.1);
    if (epoch < 2) {
      EXPECT_NE(bias.value.to_vector<double>(), b) << "epoch " << epoch;
    } else {
      EXPECT_EQ(bias.value.to_vector<double>(), b) << "epoch " << epoch;
      // Its momentum stays what the last trained step left (frozen elements are not touched).
      const std::vector<double> ma = sgd.momentum_buffer().to_vector<double>();
      for (std::int64_t i = 0; i < bias.value.numel(); ++i) {
        const auto k = static_cast<std::size_t>(bias.offset + i);
        EXPECT_EQ(ma[k], mb[k]) << "epoch " << epoch;
      }
    }
    EXPECT_NE(weight.value.to_vector<double>(), w) << "epoch " << epoch;  // the rest trains on
  }
}

}  // namespace
}  // namespace engine
