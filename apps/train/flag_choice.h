#pragma once
// Flags with a fixed set of values (--augment, --schedule, --backend, ...) are parsed into an enum, so the
// code below the parser compares enums, never strings. One table per flag names each value once; the table
// gives the parser (apps/cli/choice_option.h binds it to CLI11), the error (naming the flag, the value and
// every accepted value) and the name to print back. The training library holds the tables and no command
// line.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

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

}  // namespace engine::apps
