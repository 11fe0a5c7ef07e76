#pragma once
// The message of the engine::Error that `fn` throws, or "(no error)" when it throws none: the tests of bad
// input assert on what the message names.

#include <functional>
#include <string>

#include "core/error.h"

namespace engine::testing {

inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const engine::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace engine::testing
