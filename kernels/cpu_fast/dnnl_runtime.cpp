#include "kernels/cpu_fast/dnnl_runtime.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sys/resource.h>
#include <unistd.h>

namespace engine::cpu_fast::dnnl_rt {

void check_room_for_kernels(const char* what) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  std::ifstream statm("/proc/self/statm");  // its first number: the address space mapped, in pages
  std::uint64_t pages = 0;
  if (!(statm >> pages)) return;
  const std::uint64_t used = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::uint64_t kRoom = std::uint64_t{16} << 20;
  ENGINE_CHECK(used + kRoom <= limit.rlim_cur,
               "host out of memory: asked for {} bytes of address space for oneDNN's kernels ({}): the limit "
               "(ulimit -v) of {} bytes leaves {}",
               kRoom, what, limit.rlim_cur, limit.rlim_cur - std::min<std::uint64_t>(used, limit.rlim_cur));
}

dnnl::engine& cpu_engine() {
  static dnnl::engine engine = [] {
    dnnl::engine created;
    run("oneDNN CPU engine", [&] { created = dnnl::engine(dnnl::engine::kind::cpu, 0); });
    return created;
  }();
  return engine;
}

const char* isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::all: break;
  }
  return "any";
}

dnnl::stream& cpu_stream() {
  thread_local dnnl::stream stream = [] {
    dnnl::stream created;
    run("oneDNN CPU stream", [&] { created = dnnl::stream(cpu_engine()); });
    return created;
  }();
  return stream;
}

dnnl::memory::format_tag activation_tag(Layout l) {
  using Tag = dnnl::memory::format_tag;
  ENGINE_CHECK(l == Layout::NCHW || is_blocked(l), "oneDNN activations in {} (NCHW or blocked only)",
               layout_name(l));
  return l == Layout::NCHW16c ? Tag::nChw16c : l == Layout::NCHW8c ? Tag::nChw8c : Tag::nchw;
}

Operand::Operand(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted, bool is_input)
    : wanted_(wanted), user_(plain, cpu_engine(), DNNL_MEMORY_NONE), reordered_(plain != wanted) {
  if (reordered_) {
    check_room_for_kernels("a reorder between layouts");
    try {
      internal_ = dnnl::memory(wanted, cpu_engine());
    } catch (const dnnl::error& e) {
      ENGINE_CHECK(
          e.status != dnnl_out_of_memory,
          "host out of memory: asked for {} bytes (oneDNN's buffer for an operand in its own layout)",
          wanted.get_size());
      throw;
    }
    reorder_ = is_input ? dnnl::reorder(user_, internal_) : dnnl::reorder(internal_, user_);
  }
}

dnnl::memory& Operand::read(const void* data) {
  user_.set_data_handle(const_cast<void*>(data));  // oneDNN's API is not const; inputs are only read
  if (!reordered_) return user_;
  reorder_.execute(cpu_stream(), user_, internal_);
  return internal_;
}

dnnl::memory& Operand::read_into(const void* data, dnnl::memory& target) {
  user_.set_data_handle(const_cast<void*>(data));
  if (!reordered_) return user_;
  reorder_.execute(cpu_stream(), user_, target);
  return target;
}

dnnl::memory& Operand::write(void* data) {
  user_.set_data_handle(data);
  return reordered_ ? internal_ : user_;
}

void Operand::finish() {
  if (reordered_) reorder_.execute(cpu_stream(), internal_, user_);
}

}  // namespace engine::cpu_fast::dnnl_rt
