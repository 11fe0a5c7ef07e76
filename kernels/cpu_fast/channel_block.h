#pragma once
// The block sizes of the CPU's blocked layouts (core/layout.h: nChw8c, nChw16c) as a compile-time constant
// for the blocked kernels (batchnorm2d_blocked.cpp, maxpool2d_blocked.cpp): their per-block loops run B
// lanes.

#include "core/error.h"

namespace engine::cpu_fast {

// Calls fn.template operator()<B>() for `block` channels a block (8 or 16) and `channels` a multiple of it;
// throws naming `op` otherwise.
template <typename Fn>
void with_channel_block(const char* op, int block, int channels, Fn&& fn) {
  ENGINE_CHECK(block > 0 && channels % block == 0, "{}: a blocked layout of {} channels a block and C = {}",
               op, block, channels);
  switch (block) {
    case 8: fn.template operator()<8>(); return;
    case 16: fn.template operator()<16>(); return;
    default: ENGINE_FAIL("{}: blocks of 8 or 16 channels (nChw8c, nChw16c), not {}", op, block);
  }
}

}  // namespace engine::cpu_fast
