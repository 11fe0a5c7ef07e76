// Running out of host memory says how much was asked (core/host_new.cpp, core/allocator.cpp), so a run under
// a memory limit ends with a line a user can act on, not "std::bad_alloc" (found by scripts/faults.sh).

#include <cstddef>
#include <new>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/tensor.h"

namespace engine {
namespace {

constexpr std::size_t kPetabyte = std::size_t{1} << 50;  // below vector's max_size, far above any machine

TEST(HostOutOfMemory, OperatorNewSaysHowManyBytesWereAsked) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "under AddressSanitizer its own operator new answers (and reports the size itself)";
#else
  try {
    std::vector<char> huge(kPetabyte);
    ADD_FAILURE() << "a petabyte was allocated";
  } catch (const std::bad_alloc& e) {
    EXPECT_EQ(std::string(e.what()),
              "host out of memory: asked for 1125899906842624 bytes (1073741824.0 MiB)");
  }
#endif
}

TEST(HostOutOfMemory, AHostTensorSaysHowManyBytesWereAsked) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP()
      << "under AddressSanitizer a petabyte request is its report (allocation-size-too-big), not ours";
#endif
  try {
    const Tensor t = Tensor::empty({static_cast<std::int64_t>(kPetabyte / 4)}, DType::F32);
    ADD_FAILURE() << "a petabyte tensor was allocated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("host out of memory: asked for 1125899906842624 bytes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace engine
