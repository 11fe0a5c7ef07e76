// cpu_fast::ConvSaved (kernels/cpu_fast/conv2d.h): a layer's forward keeps its input in oneDNN's layout and
// its backward-weights reads that copy instead of converting x again. The primitives are shared by the layers
// of a shape, so the copy must be the layer's own: two "layers" of one shape run forward A, forward B,
// backward B, backward A (a network's order), and each must get its own gradients. They are checked bit for
// bit against the same calls without a ConvSaved (the same primitives on the same values: any difference is
// a wrong input), which tests/cpu/cpu_fast_kernels_test.cpp and bf16_autocast_test.cpp check against the
// float64 reference; the float32 case is checked against the reference here too, with that file's bound
// (1e-5 of the sum of |terms| per output: far below what another layer's input would give).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_weights_gemm.h"
#include "tests/common/test_data.h"

namespace engine {
namespace {

template <typename T>
std::vector<T> stored_as(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<T, bfloat16>) {
      out[i] = to_bfloat16(v[i]);
    } else {
      out[i] = v[i];
    }
  }
  return out;
}

// One layer's operands and results (outputs poisoned: 0xFF bytes, NaN in both types).
template <typename T>
struct Layer {
  std::vector<T> x, w, dy, y, dx;
  std::vector<float> bias, dw, db;
  Layer(const Conv2dShape& g, std::uint32_t seed)
      : x(stored_as<T>(testing::uniform_floats(g.x_size(), seed))),
        w(stored_as<T>(testing::uniform_floats(g.w_size(), seed + 1))),
        dy(stored_as<T>(testing::uniform_floats(g.y_size(), seed + 2))),
        y(g.y_size(), poison()),
        dx(g.x_size(), poison()),
        bias(testing::uniform_floats(static_cast<std::size_t>(g.k), seed + 3)),
        dw(g.w_size(), NAN),
        db(static_cast<std::size_t>(g.k), NAN) {}
  static T poison() {
    T v;
    std::memset(&v, 0xFF, sizeof v);
    return v;
  }
  void forward(const Conv2dShape& g, cpu_fast::ConvSaved* saved) {
    if constexpr (std::is_same_v<T, bfloat16>) {
      cpu_fast::conv2d_forward_bf16(g, x.data(), w.data(), bias.data(), y.data(), saved);
    } else {
      cpu_fast::conv2d_forward(g, x.data(), w.data(), bias.data(), y.data(), saved);
    }
  }
  void backward(const Conv2dShape& g, cpu_fast::ConvSaved* saved) {
    if constexpr (std::is_same_v<T, bfloat16>) {
      cpu_fast::conv2d_backward_bf16(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(),
                                     saved);
    } else {
      cpu_fast::conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), saved);
    }
  }
};

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Runs A and B interleaved with their ConvSaved, then each alone without one; expects the same bits.
template <typename T>
void check_two_layers(const Conv2dShape& g) {
  Layer<T> a(g, 10), b(g, 20), a_plain(g, 10), b_plain(g, 20);
  cpu_fast::ConvSaved saved_a, saved_b;
  a.forward(g, &saved_a);
  b.forward(g, &saved_b);
  b.backward(g, &saved_b);
  a.backward(g, &saved_a);
  for (Layer<T>* l : {&a_plain, &b_plain}) {
    l->forward(g, nullptr);
    l->backward(g, nullptr);
  }
  for (const auto& [got, want, name] : {std::tuple{&a, &a_plain, "A"}, std::tuple{&b, &b_plain, "B"}}) {
    EXPECT_TRUE(same_bits(got->y, want->y)) << name << " y";
    EXPECT_TRUE(same_bits(got->dx, want->dx)) << name << " dx";
    EXPECT_TRUE(same_bits(got->dw, want->dw)) << name << " dw";
    EXPECT_TRUE(same_bits(got->db, want->db)) << name << " db";
  }
  // Each backward read its own kept input (this shape's forward and backward-weights want one layout).
  EXPECT_EQ(saved_a.reuses(), 1);
  EXPECT_EQ(saved_b.reuses(), 1);

  if constexpr (std::is_same_v<T, float>) {  // and A's dw is A's, against the float64-summing reference
    std::vector<float> dx_ref(g.x_size()), dw_ref(g.w_size()), db_ref(static_cast<std::size_t>(g.k));
    std::vector<float> dx_mag(g.x_size()), dw_mag(g.w_size()), db_mag(db_ref.size());
    cpu::conv2d_backward<float>(g, a.x.data(), a.w.data(), a.dy.data(), dx_ref.data(), dw_ref.data(),
                                db_ref.data());
    std::vector<float> ax(a.x), aw(a.w), ady(a.dy);
    for (std::vector<float>* v : {&ax, &aw, &ady})
      for (float& e : *v) e = std::fabs(e);
    cpu::conv2d_backward<float>(g, ax.data(), aw.data(), ady.data(), dx_mag.data(), dw_mag.data(),
                                db_mag.data());
    for (std::size_t i = 0; i < dw_ref.size(); ++i)
      ASSERT_LE(std::fabs(static_cast<double>(a.dw[i]) - static_cast<double>(dw_ref[i])),
                1e-5 * static_cast<double>(dw_mag[i]) + 1e-6)
          << "A dw[" << i << "]";
  }
}

TEST(CpuFastConv2dSaved, TwoLayersOfOneShapeKeepTheirOwnInputsFloat32) {
  check_two_layers<float>(testing::square_conv(3, 16, 9, 7, 16, 3, 1, 1));
}

TEST(CpuFastConv2dSaved, TwoLayersOfOneShapeKeepTheirOwnInputsBf16) {
  if (!cpu_fast::native_bf16()) GTEST_SKIP() << "this host runs no native bf16 convolutions (avx512_bf16)";
  // Stride 1, a 9x9 output: backward-weights on oneDNN's bf16 kernel (weights_grad_gemm is false),
  // which reads x in the forward's layout.
  const Conv2dShape g = testing::square_conv(2, 16, 9, 9, 32, 3, 1, 1);
  ASSERT_FALSE(cpu_fast::weights_grad_gemm(g, true));
  check_two_layers<bfloat16>(g);
}

TEST(CpuFastConv2dSaved, ABackwardWithoutItsForwardConvertsX) {
  // A ConvSaved no forward filled (or one a backward used up) is not read: x is converted as without one.
  const Conv2dShape g = testing::square_conv(2, 16, 8, 8, 16, 3, 1, 1);
  Layer<float> a(g, 30), plain(g, 30);
  cpu_fast::ConvSaved saved;
  a.backward(g, &saved);
  plain.backward(g, nullptr);
  EXPECT_TRUE(same_bits(a.dw, plain.dw));
  EXPECT_EQ(saved.reuses(), 0);
  a.forward(g, &saved);
  a.backward(g, &saved);
  a.backward(g, &saved);  // the second backward of one forward converts x again
  EXPECT_TRUE(same_bits(a.dw, plain.dw));
  EXPECT_EQ(saved.reuses(), 1);
}

}  // namespace
}  // namespace engine
