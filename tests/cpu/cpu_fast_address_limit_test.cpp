// oneDNN 2.6 maps its JIT kernels' code without checking the mapping, so under an address-space limit
// (ulimit -v) too tight for them creating a primitive segfaulted (scripts/faults.sh's memory kind: 2 of 20
// trials at caps near the run's peak). The fast CPU kernels now check the room first
// (kernels/cpu_fast/dnnl_runtime.h: check_room_for_kernels) and say "host out of memory" instead. Each case
// runs in a death-test child (re-executed: no threads from other tests) whose address space is limited to
// what it has mapped plus 2 MiB, then asks for a convolution of a shape no plan exists for, or the first
// GEMM.

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/gemm.h"
#include "kernels/shapes.h"

namespace engine::cpu_fast {
namespace {

// Limits this process's address space to what it has mapped plus `room` bytes.
void limit_address_space(std::uint64_t room) {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  statm >> pages;
  const rlimit limit{pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) + room, RLIM_INFINITY};
  if (::setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(3);
}

// Runs `call` under the limit: exits 0 when it throws the out-of-memory error, 1 when it throws another, 2
// when it returns (a crash ends the child by a signal, which the death test reports).
template <typename Call>
[[noreturn]] void expect_out_of_memory(Call call) {
  limit_address_space(std::uint64_t{2} << 20);
  try {
    call();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::_Exit(std::string(e.what()).find("host out of memory") != std::string::npos ? 0 : 1);
  }
  std::_Exit(2);
}

class CpuFastAddressLimit : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP()
        << "AddressSanitizer reserves terabytes of shadow address space and maps as it allocates: a "
           "limit of what is mapped plus 2 MiB starves its own allocator first (the Release run asks)";
#endif
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(CpuFastAddressLimit, ANewConvolutionSaysOutOfMemoryInsteadOfCrashing) {
  Conv2dShape g;
  g.n = 3, g.c = 5, g.h = 11, g.w = 13, g.k = 7, g.r = 3, g.s = 3, g.pad_h = 1, g.pad_w = 1;
  std::vector<float> x(g.x_size(), 0.5F), w(g.w_size(), 0.25F), y(g.y_size());
  EXPECT_EXIT(expect_out_of_memory([&] { conv2d_forward(g, x.data(), w.data(), nullptr, y.data()); }),
              ::testing::ExitedWithCode(0),
              "host out of memory: asked for 16777216 bytes of address space for "
              "oneDNN's kernels \\(a convolution's forward\\)");
}

TEST_F(CpuFastAddressLimit, TheFirstGemmSaysOutOfMemoryInsteadOfCrashing) {
  std::vector<float> a(6 * 5, 1.0F), b(5 * 4, 1.0F), c(6 * 4);
  EXPECT_EXIT(expect_out_of_memory([&] {
                sgemm(Trans::No, Trans::No, 6, 4, 5, 1.0F, a.data(), 5, b.data(), 4, 0.0F, c.data(), 4);
              }),
              ::testing::ExitedWithCode(0), "oneDNN's kernels \\(dnnl_sgemm's first call\\)");
}

}  // namespace
}  // namespace engine::cpu_fast
