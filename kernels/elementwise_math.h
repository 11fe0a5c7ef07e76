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
  const float r2 = r * r;  // the same polynomial as exp_float's, by Estrin's scheme (shorter chain)
  const float p =
      ((1.9875691500e-4f * r + 1.3981999507e-3f) * r2 + (8.3334519073e-3f * r + 4.1665795894e-2f)) * r2 +
      (1.6666665459e-1f * r + 5.0000001201e-1f);
  const float e = (p * r2 + r) + 1.0f;
  // 2^n for n in [-126, 128]: n = 128 (only at c = kMax) is split as 2^127 * 2 so the field never overflows.
  const int ni = static_cast<int>(n);
  const bool top = ni > 127;
  const float scale = float_of(static_cast<std::uint32_t>(ni - static_cast<int>(top) + 127) << 23);
  const float y = e * scale * choose(top, 2.0f, 1.0f);
  return choose(x != x, x, choose(x > kMax, INFINITY, choose(x < kMin, 0.0f, y)));
}

ENGINE_HOST_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + exp_float(-x)); }

// e^x for x <= 0 (erfc_float's exponential), exp_float's reduction and polynomial without its selects for
// overflow, infinities and the range's ends: x is raised to -87.3 first (so e^x >= 2^-126; a caller that
// needs smaller values squares the result, which then underflows as it should), and 2^n is built from the
// bits of the rounding sum itself (n + 1.5 * 2^23 holds n in its low bits): about half exp_float's vector
// instructions. Within exp_float's 2 ulp on [-87.3, 0] (1.03 ulp measured against long double, with and
// without fused multiply-adds); NaN stays NaN.
ENGINE_HOST_DEVICE float exp_nonpositive_float(float x) {
  constexpr float kMin = -87.33654475055310f;  // e^kMin ~ FLT_MIN
  const float c = choose(x < kMin, kMin, x);   // NaN passes (the comparison is false)
  constexpr float kRound = 12582912.0f;        // 1.5 * 2^23
  const float m = c * 1.44269504088896341f + kRound;
  const float n = m - kRound;                                    // round(c / ln 2), in [-126, 0]
  const float r = (c - n * 0.693359375f) - n * -2.12194440e-4f;  // c - n ln 2, |r| <= ln 2 / 2
  const float r2 = r * r;  // the same polynomial as exp_float's, by Estrin's scheme (shorter chain)
  const float p =
      ((1.9875691500e-4f * r + 1.3981999507e-3f) * r2 + (8.3334519073e-3f * r + 4.1665795894e-2f)) * r2 +
      (1.6666665459e-1f * r + 5.0000001201e-1f);
  const float e = (p * r2 + r) + 1.0f;
  // The low bits of m are n (two's complement): shifted into the exponent field, plus 127's, they are 2^n.
  return e * float_of((bits_of(m) << 23) + 0x3f800000u);
}

// erfc in float, one expression for every a: Numerical Recipes' erfcc (Press et al., 2nd ed. 6.2, a Chebyshev
// fit): with z = |a| and t = 1 / (1 + z/2), erfc(z) = t e^(-z^2 + P(t)), P of degree 9, relative error below
// 1.2e-7 (2u, u = 2^-24) for every z >= 0 in exact arithmetic (1.05e-7 measured against long double's erfcl),
// and 2 - erfc(z) for a < 0. One branch and no selects but the sign's, so a vector lane computes one
// division, a polynomial and one exponential where Cephes' erfcf (three polynomials, every one computed per
// lane to vectorise, and exp_float's selects) took twice the instructions; on Zen 4 the loop is bound by its
// multiplies and by its longest chain, both now shorter. In float: 2u (the fit), t 2u, P 3u absolute (|P| <=
// 1.3, |terms| <= 1.5, so relative in the exponential), z^2 and the sum -z^2 + P u z^2 each (absolute, so
// relative in the exponential: z^2 = x^2/2 at GELU's x), the exponential 2 ulp (4u) taken twice, two products
// 2u: (2 z^2 + 19) u in all (tests/common/gelu_tolerance.h; the worst measured over [-4, 10.5] every 3e-6 is
// 0.88 of it without fused multiply-adds, 0.48 with). e^(-z^2 + P) is taken as the square of e^((-z^2 +
// P)/2), so that the result stays a (possibly subnormal) float where the exponential alone would leave
// float's normal range (z above 9.3, GELU's x below -13.2). NaN gives NaN, erfc(+inf) = 0, erfc(-inf) = 2.
ENGINE_HOST_DEVICE float erfc_float(float a) {
  const float z = float_of(bits_of(a) & 0x7fffffffu);  // |a|
  const float t = 1.0f / (1.0f + 0.5f * z);
  // P by Estrin's scheme (pairs, then t^2, t^4, t^8): four multiply-adds deep where Horner's is ten, so the
  // out-of-order window overlaps more lanes' chains (the loop is latency-bound, not throughput-bound).
  const float t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;
  const float q0 = 1.00002368e+0f * t - 1.26551223e+0f, q1 = 9.678418e-2f * t + 3.7409196e-1f,
              q2 = 2.7886807e-1f * t - 1.8628806e-1f, q3 = 1.48851587e+0f * t - 1.13520398e+0f,
              q4 = 1.7087277e-1f * t - 8.2215223e-1f;
  const float p = ((q0 + q1 * t2) + (q2 + q3 * t2) * t4) + q4 * t8;
  const float h = exp_nonpositive_float(0.5f * (p - z * z));
  const float e = (t * h) * h;  // erfc(|a|)
  return choose(a < 0.0f, 2.0f - e, e);
}

// GELU, the exact erf form (PyTorch's default): y = x/2 erfc(-x/sqrt 2), dy (Phi(x) + x phi(x)), through
// erfc_float and exp_float (arithmetic only, so the CPU loop runs 16 lanes wide where libm's erfcf and expf
// were a call per element). phi's exponential as the square of e^(-x^2/4), as in erfc_float, so that x phi(x)
// stays a normal float where e^(-x^2/2) alone would not (|x| above 13.2).
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
