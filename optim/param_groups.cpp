#include "optim/param_groups.h"

#include <charconv>
#include <cmath>

#include "core/error.h"

namespace engine::optim {

namespace {

double parse_number(std::string_view text, std::string_view whole) {
  double v = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  ENGINE_CHECK(
      !text.empty() && ec == std::errc() && end == text.data() + text.size() && std::isfinite(v) && v >= 0.0,
      "--param-group '{}': '{}' is not a finite number >= 0", whole, text);
  return v;
}

bool selects(const ParamGroupRule& rule, const layers::Parameter& p) {
  const std::size_t dot = rule.selector.find('.');
  if (dot != std::string::npos && p.layer != nullptr && rule.selector.substr(0, dot) == p.layer->kind()) {
    const std::string leaf = rule.selector.substr(dot + 1);
    return p.name.size() > leaf.size() && p.name.ends_with("." + leaf);
  }
  return p.name.find(rule.selector) != std::string::npos;
}

}  // namespace

ParamGroupRule parse_param_group_rule(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  ENGINE_CHECK(colon != std::string_view::npos && colon > 0 && colon + 1 < text.size(),
               "--param-group '{}': expected SELECTOR:SETTINGS (e.g. BatchNorm2d.bias:lr=64)", text);
  ParamGroupRule rule;
  rule.selector = std::string(text.substr(0, colon));
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const std::size_t comma = std::min(rest.find(','), rest.size());
    const std::string_view item = rest.substr(0, comma);
    if (item == "frozen") {
      rule.frozen = true;
    } else if (item.starts_with("lr=")) {
      rule.lr_scale = parse_number(item.substr(3), text);
    } else if (item.starts_with("wd=")) {
      rule.weight_decay = parse_number(item.substr(3), text);
    } else if (item.starts_with("epochs=")) {
      const std::string_view n = item.substr(7);
      std::int64_t v = -1;
      const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
      ENGINE_CHECK(!n.empty() && ec == std::errc() && end == n.data() + n.size() && v >= 0,
                   "--param-group '{}': epochs='{}' is not a whole number >= 0", text, n);
      rule.epochs = v;
    } else {
      ENGINE_FAIL("--param-group '{}': unknown setting '{}' (expected lr=X, wd=X, epochs=N or frozen)", text,
                  item);
    }
    rest = comma < rest.size() ? rest.substr(comma + 1) : std::string_view();
  }
  return rule;
}

std::vector<cpu::SgdGroup> param_groups_for(const layers::Model& model, std::span<const ParamGroupRule> rules,
                                            double default_weight_decay, std::int64_t epoch) {
  const std::vector<layers::Parameter>& params = model.parameters();
  const std::int64_t total = model.flat_parameters().numel();
  std::vector<bool> used(rules.size(), false);
  std::vector<cpu::SgdGroup> groups;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const layers::Parameter& p = params[k];
    std::size_t r = 0;
    while (r < rules.size() && !selects(rules[r], p)) ++r;
    if (r == rules.size()) continue;
    used[r] = true;
    const ParamGroupRule& rule = rules[r];
    const std::int64_t end = k + 1 < params.size() ? params[k + 1].offset : total;
    const bool frozen = rule.frozen || (rule.epochs && epoch >= *rule.epochs);
    const cpu::SgdGroup g{p.offset, end, rule.lr_scale, rule.weight_decay.value_or(default_weight_decay),
                          frozen};
    if (!groups.empty()) {
      cpu::SgdGroup& last = groups.back();
      if (last.end == g.begin && last.lr_scale == g.lr_scale && last.weight_decay == g.weight_decay &&
          last.frozen == g.frozen) {
        last.end = g.end;
        continue;
      }
    }
    groups.push_back(g);
  }
  for (std::size_t r = 0; r < rules.size(); ++r) {
    ENGINE_CHECK(used[r],
                 "--param-group '{}': selects no parameter of model '{}' (names are PyTorch's, see "
                 "docs/MODELS.md; Kind.leaf selects by layer kind, e.g. BatchNorm2d.bias)",
                 rules[r].selector, model.name());
  }
  return groups;
}

bool param_groups_change_with_epoch(std::span<const ParamGroupRule> rules) {
  for (const ParamGroupRule& r : rules) {
    if (r.epochs) return true;
  }
  return false;
}

}  // namespace engine::optim
