#pragma once
// ENGINE_NVTX_RANGE("name") opens an NVTX range that closes at the end of the enclosing scope, so Nsight
// Systems shows each launcher by name around its kernels. NVTX 3 is header-only (CUDA 13 ships no
// libnvToolsExt, and nothing to link but libdl for its loader): with no profiler attached
// (NVTX_INJECTION64_PATH unset), the first call finds no tool and nulls NVTX's function pointers, and every
// later push or pop is one load and a branch on that null pointer -- nothing measurable beside a launch.

#include <nvtx3/nvToolsExt.h>

namespace engine::cuda::detail {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace engine::cuda::detail

#define ENGINE_NVTX_CONCAT_INNER(a, b) a##b
#define ENGINE_NVTX_CONCAT(a, b) ENGINE_NVTX_CONCAT_INNER(a, b)
#define ENGINE_NVTX_RANGE(name) \
  const ::engine::cuda::detail::NvtxRange ENGINE_NVTX_CONCAT(engine_nvtx_range_, __LINE__)(name)
