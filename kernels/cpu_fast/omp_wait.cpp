#include "kernels/cpu_fast/omp_wait.h"

#include <cstdlib>
#include <unistd.h>

namespace engine::cpu_fast {

void prefer_passive_omp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (::setenv("OMP_WAIT_POLICY", "passive", 0) != 0) return;
  ::execv("/proc/self/exe", argv);  // returns only on failure: run on with libgomp's default
}

}  // namespace engine::cpu_fast
