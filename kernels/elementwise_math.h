#pragma once
// The float formula of every elementwise op, written once: the fast CPU loops (kernels/cpu_fast/map.h) and
// the CUDA launchers (kernels/cuda/elementwise.cuh's launch_map) apply these very functors, so the CPU tests
// check the arithmetic the GPU runs and an activation is one struct here. The float64 reference
// (kernels/cpu) does not use them: it stays the independent oracle both are measured against.
//
// Convention: f(x) is the forward value, f(x, dy) the input gradient dy * f'(x) from the forward INPUT x;
// for Sigmoid and Tanh f(y, dy) from the forward OUTPUT y (activation_backward_reads_output).
// Every operator() is ENGINE_HOST_DEVICE (core/host_device.h) and computes in float: GELU through
// normal_tail_float and gaussian_float, the activations through exp_float and tanh_float below: one
// polynomial on both (tests/common/activation_tolerance.h and gelu_tolerance.h bound them). Written so NaN
// propagates forward (a comparison with NaN is false, so `x < lo ? lo : x` keeps it).

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

// exp_float's and exp_float_beside_one's common part: c (x clamped to [kExpMin, kExpMax], or NaN) = n ln 2 +
// r with n rounded to nearest (the 1.5 * 2^23 trick) and ln 2 split in two (Cody and Waite), |r| <= ln 2 / 2,
// and q = e^r - 1 by Cephes' degree-7 Taylor-like minimax polynomial (e^r = q + 1).
inline constexpr float kExpMax = 88.72283905206835f;   // e^kExpMax ~ FLT_MAX
inline constexpr float kExpMin = -87.33654475055310f;  // e^kExpMin ~ FLT_MIN
struct ExpParts {
  float n, q;
};
ENGINE_HOST_DEVICE ExpParts exp_parts(float x) {
  const float c = choose(x > kExpMax, kExpMax, choose(x < kExpMin, kExpMin, x));
  constexpr float kRound = 12582912.0f;                          // 1.5 * 2^23
  const float n = (c * 1.44269504088896341f + kRound) - kRound;  // round(c / ln 2)
  const float r = (c - n * 0.693359375f) - n * -2.12194440e-4f;  // c - n ln 2
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return {n, p * r * r + r};
}

// e^x in float, Cephes' expf (Moshier): e^r (exp_parts) times 2^n put into the exponent field. Within 2 ulp
// over the float range (tests/cpu/activation_test.cpp measures it against double). Arithmetic and selects
// only, so the CPU loop vectorises it (libm's expf is a call per element); the GPU runs the same. Overflow
// gives +inf, underflow +0 (no subnormal results), NaN stays NaN (it passes exp_parts' clamp).
ENGINE_HOST_DEVICE float exp_float(float x) {
  const ExpParts t = exp_parts(x);
  const float e = t.q + 1.0f;
  // 2^n for n in [-126, 128]: n = 128 (only at c = kExpMax) is split as 2^127 * 2 so the field never
  // overflows.
  const int ni = static_cast<int>(t.n);
  const bool top = ni > 127;
  const float scale = float_of(static_cast<std::uint32_t>(ni - static_cast<int>(top) + 127) << 23);
  const float y = e * scale * choose(top, 2.0f, 1.0f);
  return choose(x != x, x, choose(x > kExpMax, INFINITY, choose(x < kExpMin, 0.0f, y)));
}

// e^x as exp_float computes it, for 1 + e^x only (sigmoid): the same bits wherever e^x >= 2^-125; below that
// a value under 2^-125 or +0, and 1 + either rounds to 1, as 1 + exp_float's. NaN propagates through the
// arithmetic and +inf above kExpMax is kept, but exp_float's two other selects and its split of 2^128 go: 2^n
// is put in as 2 e 2^(n-1) (the exponent field n + 126 lies in [0, 254] for the clamped n), doubling e
// exactly inside its last multiply-add. 26% less time a vector than exp_float in Sigmoid's forward (AVX-512
// clone, [64, 144, 8, 8]: 0.273 -> 0.203 ms on one thread), which trailed PyTorch's by 12-15%.
ENGINE_HOST_DEVICE float exp_float_beside_one(float x) {
  const ExpParts t = exp_parts(x);
  const float e2 = t.q * 2.0f + 2.0f;  // 2 e: the same rounding as e's q + 1.0f, scaled
  const float y = e2 * float_of(static_cast<std::uint32_t>(static_cast<int>(t.n) + 126) << 23);
  return choose(x > kExpMax, INFINITY, y);
}

// 1 / (1 + e^-x): bitwise 1 / (1 + exp_float(-x)) (tests/cpu/activation_test.cpp checks it).
ENGINE_HOST_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + exp_float_beside_one(-x)); }

// e^(-x^2/2) in float (normal_tail_float's exponential). With s = x^2 (rounded: relative u x^2/2 in the
// result), -s/2 = n ln 2 + r, n rounded to nearest by the 1.5 * 2^23 trick and ln 2 split in two (Cody and
// Waite) as exp_float does, r = -w/2 with w = s + 2n ln 2 formed directly (so -s/2 is never taken), and e^r =
// 1 + r + r^2 p(r), p of degree 3 fitted here to e^r's relative error on [-ln 2 / 2, ln 2 / 2] (Lawson's
// reweighted least squares against mpmath: 1.05e-7, 1.8u, with float coefficients), evaluated by Horner in w
// with the coefficients scaled by powers of -1/2 (exactly). 2^n, n in [-250, 0], as two halves put into the
// exponent fields by integer additions (n + 1.5 * 2^23 holds n in its low bits), so that a result below
// float's normal range rounds once to a subnormal instead of flushing: within (x^2/2 + 3.5) u where normal
// (3.1u measured at x^2/2 up to 86, with and without fused multiply-adds), the subnormal spacing below.
// Above x^2/2 = 172 (|x| > 18.5, e^-172 = 2^-248), +0; NaN stays NaN. No select but that one: about a third
// of exp_float's vector instructions.
ENGINE_HOST_DEVICE float gaussian_float(float x) {
  const float s = x * x;
  constexpr float kRound = 12582912.0f;                // 1.5 * 2^23
  const float m = s * -0.72134752044448170f + kRound;  // -s / (2 ln 2) + kRound
  const float n = m - kRound;                          // round(-s / (2 ln 2)), in [-250, 0] below the cut
  const float w = (s + n * 1.38671875f) - n * 4.24388880e-4f;  // s + 2n ln 2 = -2r, |w| <= ln 2
  float p = 8.3125317469e-03f * -0.03125f;  // the degree-5 polynomial 1 + r + r^2 p(r) in w = -2r
  p = p * w + 4.1890129447e-02f * 0.0625f;
  p = p * w + 1.6667114198e-01f * -0.125f;
  p = p * w + 4.9999231100e-01f * 0.25f;
  p = p * w - 0.5f;
  const float e = p * w + 1.0f;                           // e^r, in [0.70, 1.42]
  const std::uint32_t ni = bits_of(m) - bits_of(kRound);  // n, two's complement
  const std::uint32_t n2 = static_cast<std::uint32_t>(static_cast<std::int32_t>(ni) >> 1), n1 = ni - n2;
  const float y = float_of(bits_of(e) + (n1 << 23)) * float_of((n2 + 127u) << 23);  // e 2^n1 2^n2
  return choose(s > 344.0f, 0.0f, y);
}

// The normal distribution's tail in float: q = Phi(-|x|) (Phi the standard normal CDF, so Phi(x) is q for
// x < 0 and 1 - q above) and g = e^(-x^2/2), after Numerical Recipes' erfcc (Press et al., 2nd ed. 6.2): with
// t = 1 / (1 + |x| / (2 sqrt 2)) in (0, 1], q = t R(t) g, R(t) = erfcx(|x| / sqrt 2) / (2t) smooth on [0, 1].
// R is a degree-8 polynomial fitted here to R's relative error (Lawson's reweighted least squares against
// mpmath's erfc at 40 digits, 3000 Chebyshev nodes): its float coefficients are within 4.8e-7 (8.0u,
// u = 2^-24) of R on [0, 1] sampled every 5e-5. Where erfcc takes e^(-z^2 + P(t)), the exponential here hangs
// on x alone, so it runs beside the division and the polynomial instead of after them, and GELU's backward
// reuses it for phi. On Zen 4 (AVX-512 executed 256 bits at a time) the loop is bound by its multiplies and
// multiply-adds: 22 and a division a vector here, where Cephes' erfcf with exp_float took over 60. In float,
// q: the fit 8.0u; t 3u (the constant's rounding, the sum's, the division's), moving t R(t) by 3u (1 + max t
// R'/R = 1.26) = 6.8u; R by Horner 4.6u (its first-order running bound without fused multiply-adds, at most
// over [0, 1]); g (x^2/2 + 3.5) u (gaussian_float); two products 2u: within (x^2/2 + 24.9) u
// (tests/common/gelu_tolerance.h). NaN gives NaN; q(+-inf) = 0.
struct NormalTail {
  float q, g;  // Phi(-|x|), e^(-x^2/2)
};
ENGINE_HOST_DEVICE NormalTail normal_tail_float(float x) {
  const float g = gaussian_float(x);
  const float ax = float_of(bits_of(x) & 0x7fffffffu);  // |x|
  const float t = 1.0f / (1.0f + 0.35355339059327376f * ax);
  float r = -2.192851156e-02f;  // R by Horner's scheme
  r = r * t + 1.104767919e-01f;
  r = r * t - 1.885854900e-01f;
  r = r * t + 8.814460039e-02f;
  r = r * t + 1.389320195e-02f;
  r = r * t + 9.286514670e-02f;
  r = r * t + 1.230276227e-01f;
  r = r * t + 1.410595328e-01f;
  r = r * t + 1.410473287e-01f;
  return {(t * r) * g, g};
}

// GELU, the exact erf form (PyTorch's default): y = x Phi(x), dy (Phi(x) + x phi(x)), through
// normal_tail_float (arithmetic only, so the CPU loop runs 16 lanes wide where libm's erfcf and expf were a
// call per element), phi(x) = e^(-x^2/2) / sqrt(2 pi) from the same exponential. For x >= 0, x (1 - q) with
// q <= 1/2, so q's relative error carries over at most once.
struct Gelu {
  static constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
  ENGINE_HOST_DEVICE float operator()(float x) const {
    const float q = normal_tail_float(x).q;
    return x * choose(x < 0.0f, q, 1.0f - q);
  }
  ENGINE_HOST_DEVICE float operator()(float x, float dy) const {
    const NormalTail n = normal_tail_float(x);
    return dy * (choose(x < 0.0f, n.q, 1.0f - n.q) + (x * kInvSqrt2Pi) * n.g);
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
