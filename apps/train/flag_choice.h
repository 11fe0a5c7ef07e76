#pragma once
// Flags with a fixed set of values (--augment, --schedule, --backend, ...) are parsed into an enum by CLI11,
// so the code below the parser compares enums, never strings. One table per flag names each value once; the
// table gives the parser, the error (naming the flag, the value and every accepted value) and the name to
// print back.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include <CLI/CLI.hpp>

namespace engine::apps {

template <typename E>
struct FlagChoice {
  std::string_view name;
  E value;
};

// "a, b or c"
template <typename E, std::size_t N>
std::string choice_names(const std::array<FlagChoice<E>, N>& choices) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += choices[i].name;
  }
  return out;
}

template <typename E, std::size_t N>
std::string_view choice_name(const std::array<FlagChoice<E>, N>& choices, E value) {
  for (const FlagChoice<E>& c : choices) {
    if (c.value == value) return c.name;
  }
  return "?";
}

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
