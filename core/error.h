#pragma once
// One exception type for every failure the engine reports, and the checks that raise it.
//
// ENGINE_CHECK(cond, fmt, args...) throws engine::Error("file:line: message") when cond is false.
// The CUDA-library checks (CUDA_CHECK, CUDNN_CHECK, CUBLAS_CHECK, NCCL_CHECK) live in core/cuda_check.h
// and throw the same type, with the failing expression and the library's own message.

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace engine {

class Error : public std::runtime_error {
 public:
  Error(std::string message, const char* file, int line)
      : std::runtime_error(fmt::format("{}:{}: {}", file, line, message)), file_(file), line_(line) {}

  const char* file() const { return file_; }
  int line() const { return line_; }

 private:
  const char* file_;
  int line_;
};

}  // namespace engine

#define ENGINE_CHECK(cond, ...)                                                          \
  do {                                                                                   \
    if (!(cond)) [[unlikely]] {                                                          \
      throw ::engine::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__);            \
    }                                                                                    \
  } while (0)

#define ENGINE_FAIL(...) throw ::engine::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__)
