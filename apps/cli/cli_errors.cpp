#include "apps/cli/cli_errors.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <numeric>
#include <vector>

#include <fmt/format.h>

namespace engine::apps {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);  // distances from a[0, i) to every prefix of b
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

std::string nearest_flag(const CLI::App& app, std::string_view typed) {
  typed = typed.substr(0, typed.find('='));  // --epoch=3
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const CLI::Option* option : app.get_options()) {
    std::vector<std::string> names;
    for (const std::string& n : option->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : option->get_snames()) names.push_back("-" + n);
    for (const std::string& name : names) {
      const std::size_t d = edit_distance(typed, name);
      if (d < best_distance) best_distance = d, best = name;
    }
  }
  // Close enough to be a typo: a third of the letters wrong at most (and always 2), or a prefix of the flag.
  const std::size_t letters = typed.size() - std::min(typed.find_first_not_of('-'), typed.size());
  const bool prefix = letters >= 3 && best.starts_with(typed);
  return best_distance <= std::max<std::size_t>(2, letters / 3) || prefix ? best : std::string();
}

int report_parse_error(const CLI::App& app, const CLI::ParseError& error, std::string_view program) {
  if (error.get_exit_code() == 0) return app.exit(error);  // --help (CLI::CallForHelp): the help text
  // A flag the program does not know is what went wrong first, whichever error CLI11 raised (a required
  // flag's absence is checked before the unknown ones are reported).
  bool unknown = false;
  for (const std::string& arg : app.remaining()) {
    const bool number = arg.size() > 1 && (std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.');
    if (!arg.starts_with("-") || arg == "-" || arg == "--" || number) continue;
    const std::string near = nearest_flag(app, arg);
    fmt::print(stderr, "{}: unknown flag {}{}\n", program, arg.substr(0, arg.find('=')),
               near.empty() ? "" : "; did you mean " + near + "?");
    unknown = true;
  }
  if (!unknown) fmt::print(stderr, "{}: {}\n", program, error.what());
  fmt::print(stderr, "Run with --help for more information.\n");
  return 2;
}

}  // namespace engine::apps
