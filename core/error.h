#pragma once
// One exception type for every failure the engine reports, and the checks that raise it.
//
// ENGINE_CHECK(cond, fmt, args...) throws engine::Error("message [at dir/file.cpp:line]") when cond is false.
// The CUDA-library checks (CUDA_CHECK, CUDNN_CHECK, CUBLAS_CHECK, NCCL_CHECK) live in core/cuda_check.h
// and throw the same type, with the failing expression and the library's own message.
//
// Messages are formatted with fmt ("{}" placeholders). nvcc cannot compile fmt 9's C++20 compile-time
// format checks, so .cu files get a small run-time formatter instead: it fills each "{...}" with the next
// argument (format specs such as {:.3f} are ignored there; the values still appear).

#include <stdexcept>
#include <string>
#include <string_view>

#if defined(__CUDACC__)
#include <sstream>
#else
#include <fmt/format.h>
#endif

namespace engine {

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, const char* file, int line);

  const char* file() const { return file_; }
  int line() const { return line_; }

 private:
  const char* file_;
  int line_;
};

#if defined(__CUDACC__)
namespace detail {
inline void format_next(std::ostringstream& out, std::string_view& rest) {
  out << rest;  // no arguments left: the remaining text as it is
  rest = {};
}
template <typename First, typename... Rest>
void format_next(std::ostringstream& out, std::string_view& rest, const First& first, const Rest&... others) {
  const std::size_t open = rest.find('{');
  const std::size_t close = open == std::string_view::npos ? open : rest.find('}', open);
  if (close == std::string_view::npos) {
    out << rest << ' ' << first;
    rest = {};
  } else {
    out << rest.substr(0, open) << first;
    rest.remove_prefix(close + 1);
  }
  format_next(out, rest, others...);
}
template <typename... Args>
std::string format_message(std::string_view format, const Args&... args) {
  std::ostringstream out;
  format_next(out, format, args...);
  return out.str();
}
}  // namespace detail
#define ENGINE_FORMAT(...) ::engine::detail::format_message(__VA_ARGS__)
#else
#define ENGINE_FORMAT(...) ::fmt::format(__VA_ARGS__)
#endif

}  // namespace engine

#define ENGINE_CHECK(cond, ...)                                              \
  do {                                                                       \
    if (!(cond)) [[unlikely]] {                                              \
      throw ::engine::Error(ENGINE_FORMAT(__VA_ARGS__), __FILE__, __LINE__); \
    }                                                                        \
  } while (0)

#define ENGINE_FAIL(...) throw ::engine::Error(ENGINE_FORMAT(__VA_ARGS__), __FILE__, __LINE__)
