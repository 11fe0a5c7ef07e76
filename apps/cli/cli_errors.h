#pragma once
// How cnn_train, cnn_predict and cnn_data report a command line CLI11 refuses: --help's text as it is, any
// other error on stderr with exit status 2, and a mistyped flag named with the nearest one the program knows
// ("cnn_train: unknown flag --epoch; did you mean --epochs?"), and how they report a failure after parsing.

#include <cstddef>
#include <exception>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace engine::apps {

// Prints what `error` (thrown by app.parse) means and returns the exit status: 0 for --help, else 2.
int report_parse_error(const CLI::App& app, const CLI::ParseError& error, std::string_view program);

// The flag of `app` nearest to `typed` ("--epochs" for "--epoch" or "--epoch=3"), or "" when none is close
// enough to be what was meant.
std::string nearest_flag(const CLI::App& app, std::string_view typed);

// --verbose: a failure's message also names the engine's source location ("[at data/idx.cpp:71]", for a bug
// report). Without it a refused input reads as its message alone (issue 44).
void add_verbose_flag(CLI::App& app);

// What to print after "program: " for a failure: an engine::Error's message, with its source location under
// --verbose or when a CUDA library call failed (core/library_error.h: the engine's or the device's fault, not
// the input's); any other exception's what().
std::string failure_text(const std::exception& error);

// Levenshtein distance: the fewest insertions, deletions and substitutions turning `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace engine::apps
