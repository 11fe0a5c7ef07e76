#pragma once
// When the fast CPU loops start OpenMP threads: below this many elements a parallel region (a few
// microseconds to wake the team) costs more than the loop, so it runs on the calling thread alone.

#include <cstdint>

namespace engine::cpu_fast {

inline constexpr std::int64_t kParallelMinElements = 1 << 15;

}  // namespace engine::cpu_fast
