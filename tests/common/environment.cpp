#include "tests/common/environment.h"

namespace engine::testing {

// ENGINE_SOURCE_DIR is defined for this file alone (tests/CMakeLists.txt): __FILE__ is relative where the
// build maps paths (ccache's base_dir), and a definition on every test would make each clone's test objects
// miss the compiler cache, since the clone's path is part of their command line.
std::filesystem::path repo_root() { return std::filesystem::path(ENGINE_SOURCE_DIR); }

}  // namespace engine::testing
