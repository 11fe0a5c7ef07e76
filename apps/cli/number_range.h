#pragma once
// number_range: CLI11's Range check with refusals a user can read. CLI11's own says "Value abc not in range
// 0.000000 to 1000...000.000000" (std::to_string of its bounds: 300 digits for 1e300) for a value that is not
// a number as for one out of range, and lets NaN through. The help text stays CLI11's ("FLOAT in [0 -
// 1e+300]").

#include <sstream>
#include <string>
#include <type_traits>

#include <CLI/CLI.hpp>

namespace engine::apps {

// A check for an option of type T: the value parses as a T (else "'abc' is not a number" / "is not an
// integer" / "is not a non-negative integer") and lies in [min, max] (else "-1 is outside [1, 1000000]");
// CLI11 puts the flag in front.
template <typename T>
CLI::Validator number_range(T min, T max) {
  static_assert(std::is_arithmetic_v<T>);
  std::ostringstream description;
  description << CLI::detail::type_name<T>() << " in [" << min << " - " << max << "]";
  auto check = [min, max](std::string& input) -> std::string {
    // strtoull reads "-1" as 2^64 - 1: a sign is no part of an unsigned number.
    if (std::is_unsigned_v<T> && input.find('-') != std::string::npos)
      return "'" + input + "' is not a non-negative integer";
    T value{};
    // value != value: NaN, which every comparison below would let through.
    if (!CLI::detail::lexical_cast(input, value) || value != value)  // NOLINT(misc-redundant-expression)
      return "'" + input + "' is not " + (std::is_integral_v<T> ? "an integer" : "a number");
    if (value >= min && value <= max) return {};
    std::ostringstream out;
    out << input << " is outside [" << min << ", " << max << "]";
    return out.str();
  };
  return CLI::Validator(check, description.str(), "RANGE");
}

}  // namespace engine::apps
