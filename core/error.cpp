#include "core/error.h"

namespace engine {

Error::Error(const std::string& message, const char* file, int line)
    : std::runtime_error(fmt::format("{}:{}: {}", file, line, message)), file_(file), line_(line) {}

}  // namespace engine
