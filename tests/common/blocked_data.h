#pragma once
// Host vectors of 4-d activations between NCHW and the CPU's blocked layouts (core/layout.h: nChw16c,
// nChw8c, [N][C/b][H*W][b]), written out index by index as the layout defines them, for the kernel tests that
// feed blocked tensors to a kernel and compare with the NCHW reference.

#include <cstddef>
#include <vector>

#include "core/layout.h"

namespace engine::testing {

// The offset of NCHW element (s, ch, i) of [n, c, hw] in `layout`'s order: (((s C/b + ch/b) HW + i) b + ch%b.
inline std::size_t blocked_offset(int s, int ch, int i, int c, int hw, int b) {
  return ((static_cast<std::size_t>(s) * (c / b) + ch / b) * hw + i) * b + ch % b;
}

// Copies between NCHW order and `layout`'s: to_layout true writes v (NCHW) in the layout's order, false the
// inverse (NCHW: v itself).
template <typename T>
std::vector<T> relaid(const std::vector<T>& v, int n, int c, int hw, Layout layout, bool to_layout) {
  const int b = layout_block(layout);
  if (b == 0) return v;
  std::vector<T> out(v.size());
  for (int s = 0; s < n; ++s)
    for (int ch = 0; ch < c; ++ch)
      for (int i = 0; i < hw; ++i) {
        const std::size_t plain = (static_cast<std::size_t>(s) * c + ch) * hw + i,
                          blocked = blocked_offset(s, ch, i, c, hw, b);
        if (to_layout)
          out[blocked] = v[plain];
        else
          out[plain] = v[blocked];
      }
  return out;
}

// v [N, C, HW] (NCHW) in `layout`'s order, and back.
template <typename T>
std::vector<T> in_layout(const std::vector<T>& v, int n, int c, int hw, Layout layout) {
  return relaid(v, n, c, hw, layout, true);
}
template <typename T>
std::vector<T> from_layout(const std::vector<T>& v, int n, int c, int hw, Layout layout) {
  return relaid(v, n, c, hw, layout, false);
}

}  // namespace engine::testing
