#include "apps/cli/cli_errors.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/library_error.h"

namespace engine::apps {

namespace {

bool verbose_failures = false;  // --verbose

// An engine::Error's what() without the " [at dir/file.cpp:line]" that core/error.cpp appends.
std::string_view without_location(const Error& error) {
  const std::string_view what = error.what();
  const std::string tail = fmt::format(":{}]", error.line());
  const std::size_t at = what.rfind(" [at ");
  if (!what.ends_with(tail) || at == std::string_view::npos) return what;
  return what.substr(0, at);
}

// CLI11's words said plainly: a flag given twice is "--epochs: At Most 1 required but received 2".
std::string plain_parse_error(const CLI::ParseError& error) {
  std::string what = error.what();
  const std::string at_most = ": At Most 1 required but received ";
  const std::size_t at = what.find(at_most);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) == nullptr || at == std::string::npos) return what;
  return fmt::format("{} is given {} times; give it once", what.substr(0, at),
                     what.substr(at + at_most.size()));
}

}  // namespace

void add_verbose_flag(CLI::App& app) {
  verbose_failures = false;  // until this app's command line says otherwise
  app.add_flag("--verbose", verbose_failures,
               "a failure's message also names the source location that raised it (for a bug report)");
}

std::string failure_text(const std::exception& error) {
  const auto* engine_error = dynamic_cast<const Error*>(&error);
  if (engine_error == nullptr || verbose_failures || dynamic_cast<const LibraryError*>(&error) != nullptr) {
    return error.what();
  }
  return std::string(without_location(*engine_error));
}

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
  if (!unknown) fmt::print(stderr, "{}: {}\n", program, plain_parse_error(error));
  fmt::print(stderr, "Run with --help for more information.\n");
  return 2;
}

}  // namespace engine::apps
