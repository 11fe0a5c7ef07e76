// One program, built twice by benchmarks/onednn_versions.sh (against Debian's oneDNN 2.x and against PyPI's
// 3.x), that times the convolutions of the engine's CIFAR resnet18 at batch 64 the way kernels/cpu_fast asks
// for them: layouts `any` (oneDNN's blocked choice), direct algorithm, forward training, backward-data and
// backward-weights (float32 dW for bf16 data, as the engine accumulates). Reorders are not timed: the
// question is which library's kernels are faster (issue 43 item 5), not the engine's step.
//
//   conv_versions f32|bf16 REPS   prints one line per (shape, direction): min and median ms, the
//   implementation
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace {
using dnnl::memory;
using tag = memory::format_tag;

struct Shape {
  const char* name;
  memory::dim c, hw, k, kernel, stride;
};

// resnet18's CIFAR convolutions (models/resnet.cpp's widths), batch 64.
constexpr Shape kShapes[] = {
    {"3->64 32x32 3x3 s1", 3, 32, 64, 3, 1},       {"64->64 32x32 3x3 s1", 64, 32, 64, 3, 1},
    {"64->128 32x32 3x3 s2", 64, 32, 128, 3, 2},   {"128->128 16x16 3x3 s1", 128, 16, 128, 3, 1},
    {"128->256 16x16 3x3 s2", 128, 16, 256, 3, 2}, {"256->256 8x8 3x3 s1", 256, 8, 256, 3, 1},
    {"256->512 8x8 3x3 s2", 256, 8, 512, 3, 2},    {"512->512 4x4 3x3 s1", 512, 4, 512, 3, 1},
    {"64->128 32x32 1x1 s2", 64, 32, 128, 1, 2},   {"128->256 16x16 1x1 s2", 128, 16, 256, 1, 2},
    {"256->512 8x8 1x1 s2", 256, 8, 512, 1, 2},
};
constexpr memory::dim kBatch = 64;

// A memory of `md`'s size filled with small values of its type (bf16 or float32) (timing does not depend on
// them, denormals aside, which these are not).
memory filled(const memory::desc& md, const dnnl::engine& eng, bool bf16) {
  memory m(md, eng);
  const std::size_t bytes = md.get_size();
  auto* p = static_cast<unsigned char*>(m.get_data_handle());
  if (bf16) {
    const std::uint16_t v = 0x3c23;  // ~0.01 in bf16
    for (std::size_t i = 0; i + 1 < bytes; i += 2) std::memcpy(p + i, &v, 2);
  } else {
    const float v = 0.01f;
    for (std::size_t i = 0; i + 3 < bytes; i += 4) std::memcpy(p + i, &v, 4);
  }
  return m;
}

template <class Pd, class Prim>
void time_it(const char* shape, const char* dir, const Pd& pd, std::unordered_map<int, memory> args,
             dnnl::stream& strm, int reps) {
  Prim prim(pd);
  std::vector<double> ms;
  for (int i = 0; i < reps + 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    prim.execute(strm, args);
    strm.wait();
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 2) ms.push_back(t);  // two warm-ups
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-24s %-12s %8.2f %8.2f  %s\n", shape, dir, ms.front(), ms[ms.size() / 2], pd.impl_info_str());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "f32" && std::string(argv[1]) != "bf16")) {
    std::fprintf(stderr, "usage: conv_versions f32|bf16 REPS\n");
    return 2;
  }
  const bool bf16 = std::string(argv[1]) == "bf16";
  const int reps = std::max(1, std::atoi(argv[2]));
  const auto dt = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl_version_t* v = dnnl_version();
  std::printf("oneDNN %d.%d.%d, %s, batch %ld\n", v->major, v->minor, v->patch, argv[1],
              static_cast<long>(kBatch));
  for (const Shape& s : kShapes) {
    const memory::dim pad = s.kernel / 2, out = (s.hw + 2 * pad - s.kernel) / s.stride + 1;
    const memory::desc src({kBatch, s.c, s.hw, s.hw}, dt, tag::any);
    const memory::desc wei({s.k, s.c, s.kernel, s.kernel}, dt, tag::any);
    const memory::desc dwei({s.k, s.c, s.kernel, s.kernel}, memory::data_type::f32, tag::any);
    const memory::desc dst({kBatch, s.k, out, out}, dt, tag::any);
    const memory::dims strides{s.stride, s.stride}, pads{pad, pad};
    const auto direct = dnnl::algorithm::convolution_direct;
    using Fwd = dnnl::convolution_forward;
    using Bwd = dnnl::convolution_backward_data;
    using BwdW = dnnl::convolution_backward_weights;
#if DNNL_VERSION_MAJOR >= 3
    const Fwd::primitive_desc fwd(eng, dnnl::prop_kind::forward_training, direct, src, wei, dst, strides,
                                  pads, pads);
    const Bwd::primitive_desc bwd(eng, direct, src, wei, dst, strides, pads, pads, fwd);
    const BwdW::primitive_desc bwdw(eng, direct, src, dwei, dst, strides, pads, pads, fwd);
#else
    const Fwd::primitive_desc fwd(
        Fwd::desc(dnnl::prop_kind::forward_training, direct, src, wei, dst, strides, pads, pads), eng);
    const Bwd::primitive_desc bwd(Bwd::desc(direct, src, wei, dst, strides, pads, pads), eng, fwd);
    const BwdW::primitive_desc bwdw(BwdW::desc(direct, src, dwei, dst, strides, pads, pads), eng, fwd);
#endif
    time_it<Fwd::primitive_desc, Fwd>(s.name, "forward", fwd,
                                      {{DNNL_ARG_SRC, filled(fwd.src_desc(), eng, bf16)},
                                       {DNNL_ARG_WEIGHTS, filled(fwd.weights_desc(), eng, bf16)},
                                       {DNNL_ARG_DST, filled(fwd.dst_desc(), eng, bf16)}},
                                      strm, reps);
    time_it<Bwd::primitive_desc, Bwd>(s.name, "bwd-data", bwd,
                                      {{DNNL_ARG_DIFF_SRC, filled(bwd.diff_src_desc(), eng, bf16)},
                                       {DNNL_ARG_WEIGHTS, filled(bwd.weights_desc(), eng, bf16)},
                                       {DNNL_ARG_DIFF_DST, filled(bwd.diff_dst_desc(), eng, bf16)}},
                                      strm, reps);
    time_it<BwdW::primitive_desc, BwdW>(
        s.name, "bwd-weights", bwdw,
        {{DNNL_ARG_SRC, filled(bwdw.src_desc(), eng, bf16)},
         {DNNL_ARG_DIFF_WEIGHTS, filled(bwdw.diff_weights_desc(), eng, false)},
         {DNNL_ARG_DIFF_DST, filled(bwdw.diff_dst_desc(), eng, bf16)}},
        strm, reps);
  }
  return 0;
}
