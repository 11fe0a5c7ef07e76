#include "kernels/cpu_fast/conv2d_algo.h"

#include <atomic>

#include "core/error.h"
#include "kernels/cpu_fast/dnnl_runtime.h"

namespace engine::cpu_fast {
namespace {

std::atomic<ConvAlgo> g_algo{ConvAlgo::Direct};

}  // namespace

const char* conv_algo_name(ConvAlgo a) {
  switch (a) {
    case ConvAlgo::Direct: return "direct";
    case ConvAlgo::Winograd: return "winograd";
    case ConvAlgo::Auto: return "auto";
  }
  return "?";
}

void set_conv_algo(ConvAlgo a) {
  ENGINE_CHECK(a != ConvAlgo::Winograd || winograd_available(),
               "--cpu-conv-algo winograd: this host's oneDNN ({}.{}.{}, ISA {}) has no Winograd convolution "
               "(oneDNN 2.x has it on AVX-512 only; 3.2 removed it): use direct or auto",
               dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch, dnnl_rt::isa_name());
  g_algo.store(a);
}

ConvAlgo conv_algo() { return g_algo.load(); }

bool winograd_shape(const Conv2dShape& g) {
  return g.r == 3 && g.s == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 &&
         g.dilation_w == 1 && g.groups == 1;
}

bool winograd_available() {
  static const bool available = [] {
    using dnnl::memory;
    const auto f32 = memory::data_type::f32;
    const auto any = memory::format_tag::any;
    try {
      const memory::desc x({1, 16, 8, 8}, f32, any), w({16, 16, 3, 3}, f32, any), y({1, 16, 8, 8}, f32, any);
      const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training,
                                              dnnl::algorithm::convolution_winograd, x, w, y, {1, 1}, {1, 1},
                                              {1, 1});
      const dnnl::convolution_forward::primitive_desc pd(d, dnnl_rt::cpu_engine());
      return true;
    } catch (const dnnl::error&) {
      return false;  // dnnl_unimplemented: no Winograd kernel for this ISA
    }
  }();
  return available;
}

}  // namespace engine::cpu_fast
