#pragma once
// The float formula of every elementwise op, written once: the fast CPU loops (kernels/cpu_fast/map.h) and
// the CUDA launchers (kernels/cuda/elementwise.cuh's launch_map) apply these very functors, so the CPU tests
// check the arithmetic the GPU runs and an activation is one struct here. The float64 reference
// (kernels/cpu) does not use them: it stays the independent oracle both are measured against.
//
// Convention: f(x) is the forward value, f(x, dy) the input gradient dy * f'(x) from the forward INPUT x;
// for Sigmoid and Tanh f(y, dy) from the forward OUTPUT y (activation_backward_reads_output).
// Every operator() is ENGINE_HOST_DEVICE (core/host_device.h) and computes in float: GELU through
// erfc_float and exp_float, the activations through exp_float and tanh_float below: one polynomial on both
// (tests/common/activation_tolerance.h and gelu_tolerance.h bound them).
// Written so NaN propagates forward (a comparison with NaN is false, so `x < lo ? lo : x` keeps it).

#include <cstdint>
#include <math.h>  // INFINITY: the same unqualified name nvcc's device library declares

#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

#include "core/host_device.h"
#include "core/philox.h"
#include "kernels/activation_kind.h"

namespace engine::elementwise {

ENGINE_HOST_DEVICE std::uint32_t bits_of(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  return std::bit_cast<std::uint32_t>(v);
#endif
}

ENGINE_HOST_DEVICE float float_of(std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  return std::bit_cast<float>(b);
#endif
}

// dy where `keep`, else +0, as a bitwise and: branch-free, so the CPU loop vectorises (GCC keeps a float
// select as control flow); the same bits as `keep ? dy : 0.0f`.
ENGINE_HOST_DEVICE float pass_if(bool keep, float dy) {
  return float_of(bits_of(dy) & (0u - static_cast<std::uint32_t>(keep)));
}

// c ? a : b, as bits (branch-free for the same reason).
ENGINE_HOST_DEVICE float choose(bool c, float a, float b) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return float_of((bits_of(a) & m) | (bits_of(b) & ~m));
}

struct Relu {
  ENGINE_HOST_DEVICE float operator()(float x) const { return (x > 0.0f || x != x) ? x : 0.0f; }
  ENGINE_HOST_DEVICE float operator()(float x, float dy) const {
    return pass_if(x > 0.0f, dy);
  }  // 0 at 0, NaN
};

// y = a x, the double product rounded once (bitwise the reference: one multiplication, nothing to contract).
struct Scale {
  double a;
  ENGINE_HOST_DEVICE float operator()(float x) const {
    return static_cast<float>(a * static_cast<double>(x));
  }
};

// y = a + b: the reference forms it in double and rounds once, which for two floats is the float sum itself
// (double has more than twice float's precision), so one float addition is bitwise the reference.
struct Sum {
  ENGINE_HOST_DEVICE float operator()(float a, float b) const { return a + b; }
};

// Inverted dropout: element i is kept iff uniform(word i of Philox) >= p, and scaled by 1 / (1 - p) in
// double.
struct DropoutMask {
  float p;
  double scale;  // 1 / (1 - p); unused when p = 1 (nothing is kept)
  ENGINE_HOST_DEVICE bool keep(std::uint32_t word) const { return uniform_from_bits(word) >= p; }
  ENGINE_HOST_DEVICE float operator()(std::uint32_t word, float v) const {
    return keep(word) ? static_cast<float>(static_cast<double>(v) * scale) : 0.0f;
  }
};

// e^x in float, Cephes' expf (Moshier): x = n ln 2 + r with n rounded to nearest (the 1.5 * 2^23 trick) and
// ln 2 split in two (Cody and Waite), e^r by its degree-7 Taylor-like minimax polynomial, then 2^n put into
// the exponent field. Within 2 ulp over the float range (tests/cpu/activation_test.cpp measures it against
// double). Arithmetic and selects only, so the CPU loop vectorises it (libm's expf is a call per element);
// the GPU runs the same. Overflow gives +inf, underflow +0 (no subnormal results), NaN stays NaN.
ENGINE_HOST_DEVICE float exp_float(float x) {
  constexpr float kMax = 88.72283905206835f,
                  kMin = -87.33654475055310f;                         // e^kMax ~ FLT_MAX, e^kMin ~ FLT_MIN
  const float c = choose(x > kMax, kMax, choose(x < kMin, kMin, x));  // NaN passes (fixed at the end)
  constexpr float kRound = 12582912.0f;                               // 1.5 * 2^23
  const float n = (c * 1.44269504088896341f + kRound) - kRound;       // round(c / ln 2)
  const float r = (c - n * 0.693359375f) - n * -2.12194440e-4f;       // c - n ln 2, |r| <= ln 2 / 2
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = (p * r * r + r) + 1.0f;
  // 2^n for n in [-126, 128]: n = 128 (only at c = kMax) is split as 2^127 * 2 so the field never overflows.
  const int ni = static_cast<int>(n);
  const bool top = ni > 127;
  const float scale = float_of(static_cast<std::uint32_t>(ni - static_cast<int>(top) + 127) << 23);
  const float y = e * scale * choose(top, 2.0f, 1.0f);
  return choose(x != x, x, choose(x > kMax, INFINITY, choose(x < kMin, 0.0f, y)));
}

ENGINE_HOST_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + exp_float(-x)); }

// erfc in float, Cephes' erfcf (ndtrf.c, Moshier): below |a| = 1, 1 - a T(a^2) (erf's odd polynomial);
// above, e^(-a^2) / |a| times a polynomial in 1/a^2 (one for |a| < 2, another above), and 2 minus that for
// a < 0. e^(-a^2) is taken as the square of e^(-a^2/2), so that the result stays a (possibly subnormal)
// float where e^(-a^2) alone would underflow exp_float's range (|a| above 9.3, GELU's x below -13.2). All
// branches computed and one chosen, so the CPU loop vectorises. NaN gives NaN, erfc(+inf) = 0,
// erfc(-inf) = 2. tests/common/gelu_tolerance.h bounds GELU through it.
ENGINE_HOST_DEVICE float erfc_float(float a) {
  const float x = float_of(bits_of(a) & 0x7fffffffu);  // |a|
  const float a2 = a * a;
  float t = 7.853861353153693e-5f;
  t = t * a2 - 8.010193625184903e-4f;
  t = t * a2 + 5.188327685732524e-3f;
  t = t * a2 - 2.685381193529856e-2f;
  t = t * a2 + 1.128358514861418e-1f;
  t = t * a2 - 3.761262582423300e-1f;
  t = t * a2 + 1.128379165726710e+0f;
  const float small = 1.0f - a * t;
  const float q = 1.0f / x, y = q * q;
  float p = 2.326819970068386e-2f;  // 1 <= |a| < 2
  p = p * y - 1.387039388740657e-1f;
  p = p * y + 3.687424674597105e-1f;
  p = p * y - 5.824733027278666e-1f;
  p = p * y + 6.210004621745983e-1f;
  p = p * y - 4.944515323274145e-1f;
  p = p * y + 3.404879937665872e-1f;
  p = p * y - 2.741127028184656e-1f;
  p = p * y + 5.638259427386472e-1f;
  float r = -1.047766399936249e+1f;  // |a| >= 2
  r = r * y + 1.297719955372516e+1f;
  r = r * y - 7.495518717768503e+0f;
  r = r * y + 2.921019019210786e+0f;
  r = r * y - 1.015265279202700e+0f;
  r = r * y + 4.218463358204948e-1f;
  r = r * y - 2.820767439740514e-1f;
  r = r * y + 5.641895067754075e-1f;
  const float h = exp_float(-0.5f * a2);
  const float tail = ((h * q) * choose(x < 2.0f, p, r)) * h;  // erfc(|a|)
  return choose(x < 1.0f, small, choose(a < 0.0f, 2.0f - tail, tail));
}

// GELU, the exact erf form: y = x/2 erfc(-x/sqrt 2), dy (Phi(x) + x phi(x)), through erfc_float and
// exp_float (arithmetic only, so the CPU loop runs 16 lanes wide where libm's erfcf and expf were a call per
// element). phi's exponential as the square of e^(-x^2/4), as in erfc_float, so that x phi(x) stays a normal
// float where e^(-x^2/2) alone would not (|x| above 13.2).
struct Gelu {
  static constexpr float kInvSqrt2 = 0.70710678118654752440f;
  static constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
  ENGINE_HOST_DEVICE float operator()(float x) const { return 0.5f * x * erfc_float(-x * kInvSqrt2); }
  ENGINE_HOST_DEVICE float operator()(float x, float dy) const {
    const float h = exp_float(-0.25f * x * x);
    return dy * (0.5f * erfc_float(-x * kInvSqrt2) + x * kInvSqrt2Pi * h * h);
  }
};

// tanh in float, Cephes' tanhf: an odd polynomial below |x| = 0.625, 1 - 2 / (e^2|x| + 1) above, sign put
// back; within 2 ulp. Both branches are computed and one chosen, so the CPU loop vectorises.
ENGINE_HOST_DEVICE float tanh_float(float x) {
  const float a = float_of(bits_of(x) & 0x7fffffffu);  // |x|
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float big = 1.0f - 2.0f / (exp_float(a + a) + 1.0f);
  return choose(a < 0.625f, small, choose(x < 0.0f, -big, big));  // NaN: a < 0.625 is false, big is NaN
}

struct Sigmoid {
  ENGINE_HOST_DEVICE float operator()(float x) const { return sigmoid(x); }
  // From the output y: PyTorch's sigmoid_backward, dy (1 - y) y.
  ENGINE_HOST_DEVICE float operator()(float y, float dy) const { return dy * ((1.0f - y) * y); }
};

struct Tanh {
  ENGINE_HOST_DEVICE float operator()(float x) const { return tanh_float(x); }
  // From the output y: PyTorch's tanh_backward, dy (1 - y^2).
  ENGINE_HOST_DEVICE float operator()(float y, float dy) const { return dy * (1.0f - y * y); }
};

struct SiLU {
  ENGINE_HOST_DEVICE float operator()(float x) const { return x * sigmoid(x); }
  ENGINE_HOST_DEVICE float operator()(float x, float dy) const {
    const float s = sigmoid(x);
    return dy * (s * (1.0f + x * (1.0f - s)));  // PyTorch's silu_backward
  }
};

struct HardSigmoid {
  float alpha, beta;
  ENGINE_HOST_DEVICE float operator()(float x) const {
    const float t = alpha * x + beta;
    return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
  }
  ENGINE_HOST_DEVICE float operator()(float x, float dy) const {
    const float t = alpha * x + beta;
    return pass_if((t > 0.0f) & (t < 1.0f), dy * alpha);  // &, not &&: no branch
  }
};

struct HardSwish {
  ENGINE_HOST_DEVICE float operator()(float x) const {
    const float r = x + 3.0f;
    return x * (r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r)) / 6.0f;  // PyTorch's order of operations
  }
  ENGINE_HOST_DEVICE float operator()(float x, float dy) const {  // 0 below -3, dy above 3
    return pass_if(!(x < -3.0f), dy * choose(x <= 3.0f, x / 3.0f + 0.5f, 1.0f));
  }
};

struct Clip {
  float lo, hi;
  ENGINE_HOST_DEVICE float operator()(float x) const { return x < lo ? lo : (x > hi ? hi : x); }
  ENGINE_HOST_DEVICE float operator()(float x, float dy) const { return pass_if((x > lo) & (x < hi), dy); }
};

struct LeakyRelu {
  float alpha;
  ENGINE_HOST_DEVICE float operator()(float x) const { return choose(x > 0.0f, x, x * alpha); }
  ENGINE_HOST_DEVICE float operator()(float x, float dy) const { return choose(x > 0.0f, dy, dy * alpha); }
};

// Calls fn(functor) with the functor of `p` (host code: picks the instantiation a device runs).
template <typename Fn>
void visit_activation(const ActivationParams& p, Fn&& fn) {
  switch (p.kind) {
    case ActivationKind::Sigmoid: return fn(Sigmoid{});
    case ActivationKind::Tanh: return fn(Tanh{});
    case ActivationKind::SiLU: return fn(SiLU{});
    case ActivationKind::HardSigmoid: return fn(HardSigmoid{p.alpha, p.beta});
    case ActivationKind::HardSwish: return fn(HardSwish{});
    case ActivationKind::Clip: return fn(Clip{p.alpha, p.beta});
    case ActivationKind::LeakyRelu: return fn(LeakyRelu{p.alpha});
  }
}

}  // namespace engine::elementwise
