#pragma once
// The engine::Error a failed CUDA-library call throws (core/cuda_check.h): a fault of the engine or of the
// device, never of the user's input, so a program reports it with its source location (apps/cli/cli_errors.h)
// where a refused input reads as its message alone.

#include "core/error.h"

namespace engine {

class LibraryError : public Error {
 public:
  using Error::Error;
};

}  // namespace engine
