#pragma once
// add_choice_option: a flag with a fixed set of values (a FlagChoice table, apps/train/flag_choice.h) as a
// CLI11 option bound to its enum, for the programs and the benchmarks.

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

#include <CLI/CLI.hpp>

#include "apps/train/flag_choice.h"

namespace engine::apps {

// Adds `flag` bound to the enum `target`: the command line names one of `choices`; anything else fails the
// parse (exit 2) with "FLAG: 'VALUE' is not one of a, b or c". The help shows the current value's name as
// the default.
template <typename E, std::size_t N>
CLI::Option* add_choice_option(CLI::App& app, const std::string& flag, E& target,
                               const std::array<FlagChoice<E>, N>& choices, const std::string& help) {
  static_assert(std::is_enum_v<E>);
  auto to_underlying = [choices](std::string& text) -> std::string {
    for (const FlagChoice<E>& c : choices) {
      if (text == c.name) {
        text = std::to_string(static_cast<std::underlying_type_t<E>>(c.value));  // CLI11 reads enums as such
        return {};
      }
    }
    return "'" + text + "' is not one of " + choice_names(choices);
  };
  std::string names = "{";
  for (const FlagChoice<E>& c : choices) names += (names.size() > 1 ? "," : "") + std::string(c.name);
  names += "}";
  return app.add_option(flag, target, help)
      ->transform(CLI::Validator(to_underlying, names))
      ->default_str(std::string(choice_name(choices, target)));
}

}  // namespace engine::apps
