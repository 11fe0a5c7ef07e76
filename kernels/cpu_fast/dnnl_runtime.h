#pragma once
// The oneDNN CPU engine and stream the fast CPU kernels share, a plain tensor as oneDNN sees it, and the
// reorder between the caller's plain layout and the layout a primitive prefers. Included by kernels/cpu_fast
// .cpp files only, so oneDNN's header stays out of every other file.
//
// Threads: oneDNN runs on OpenMP (Debian's build uses libgomp, the runtime of the other fast kernels), so
// OMP_NUM_THREADS sets how many cores a step uses.

#include <oneapi/dnnl/dnnl.hpp>

#include "core/error.h"
#include "core/layout.h"

namespace engine::cpu_fast::dnnl_rt {

dnnl::engine& cpu_engine();  // one per process
dnnl::stream& cpu_stream();  // one per thread (oneDNN streams are not shared between threads)

// The widest instruction set oneDNN dispatches its JIT kernels for on this host (dnnl::get_effective_cpu_isa:
// "avx2", "avx512_core", "avx512_core_bf16", ...; ONEDNN_MAX_CPU_ISA lowers it).
const char* isa_name();

// Runs fn(), turning a dnnl::error it throws into an engine::Error naming `op`, with oneDNN's status and
// message.
template <typename Fn>
void run(const char* op, Fn&& fn) {
  try {
    fn();
  } catch (const dnnl::error& e) {
    ENGINE_CHECK(e.status != dnnl_out_of_memory,
                 "{}: host out of memory inside oneDNN ({}; its size not told)", op, e.what());
    ENGINE_FAIL("{}: oneDNN failed: {} (status {})", op, e.what(), static_cast<int>(e.status));
  }
}

// oneDNN 2.6 maps the code of its JIT kernels (a primitive's, a reorder's, and on dnnl_sgemm's first call
// all of its GEMM kernels: 5.8 MiB, measured) without checking the mapping: under an address-space limit
// (ulimit -v) too tight for it, creating the primitive segfaults (scripts/faults.sh's memory kind). Called
// before each creation: throws "host out of memory" naming `what` when the limit leaves less than 16 MiB
// (the GEMM kernels and a margin for what other threads map meanwhile); free without a limit.
void check_room_for_kernels(const char* what);

// oneDNN's tag for a 4-d activation in the engine's layout `l`: nchw, nChw8c, nChw16c (NHWC is refused: the
// callers transpose it to NCHW first).
dnnl::memory::format_tag activation_tag(Layout l);

// One operand of a primitive: the caller's plain buffer (`user`, its pointer set per call) and the
// primitive's own layout. When the two differ, `internal` is a buffer owned here (allocated once, when the
// plan is built) and a cached reorder converts between them; otherwise the primitive reads the caller's
// buffer directly and no copy happens.
class Operand {
 public:
  Operand() = default;
  Operand(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted, bool is_input);

  // An input: points at `data`, converts it into the primitive's layout when needed, returns what the
  // primitive reads.
  dnnl::memory& read(const void* data);
  // The same into `target` (a buffer of the caller's in the primitive's layout) when a conversion is needed;
  // else the caller's buffer as read() gives it.
  dnnl::memory& read_into(const void* data, dnnl::memory& target);
  bool converts() const { return reordered_; }
  // An output: returns what the primitive writes; finish() converts it into `data` when needed.
  dnnl::memory& write(void* data);
  void finish();
  // The layout the primitive uses: two operands that want the same one can share a single reorder.
  const dnnl::memory::desc& wanted() const { return wanted_; }

 private:
  dnnl::memory::desc wanted_;
  dnnl::memory user_, internal_;
  dnnl::reorder reorder_;
  bool reordered_ = false;
};

}  // namespace engine::cpu_fast::dnnl_rt
