// Patch whitening (layers/patch_whitening.h): the patch second moment by hand, the eigendecomposition's order
// and sign conventions, the weights by hand, and the property that matters: the whitened training patches
// have the identity as covariance (eps = 0) or diag(lambda / (lambda + eps)). Bad inputs are refused.

#include "layers/patch_whitening.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace engine::layers {
namespace {

TEST(PatchWhitening, CovarianceOfOneChannelByHand) {
  // 3x3 image 1..9, 2x2 patches [1 2 4 5], [2 3 5 6], [4 5 7 8], [5 6 8 9].
  const std::vector<float> image = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<double> c = patch_covariance(image, 1, 1, 3, 3, 2);
  ASSERT_EQ(c.size(), 16u);
  EXPECT_DOUBLE_EQ(c[0 * 4 + 0], (1.0 + 4 + 16 + 25) / 4);                // 11.5
  EXPECT_DOUBLE_EQ(c[0 * 4 + 1], (1.0 * 2 + 2 * 3 + 4 * 5 + 5 * 6) / 4);  // 14.5
  EXPECT_DOUBLE_EQ(c[1 * 4 + 0], c[0 * 4 + 1]);
  EXPECT_DOUBLE_EQ(c[0 * 4 + 3], (1.0 * 5 + 2 * 6 + 4 * 8 + 5 * 9) / 4);  // 23.5
  EXPECT_DOUBLE_EQ(c[3 * 4 + 3], (25.0 + 36 + 64 + 81) / 4);              // 51.5
}

TEST(PatchWhitening, CovarianceFollowsTheConvWeightOrderAndAveragesImages) {
  // Two 2x2 images of 2 channels, kernel 2: one patch each, element c*4 + dy*2 + dx (the weight's
  // [in][kh][kw]). Image 0 is p = 1..8, image 1 is -p: the second moment is p p^T (not centred).
  std::vector<float> images = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int i = 0; i < 8; ++i) images.push_back(-images[i]);
  const std::vector<double> c = patch_covariance(images, 2, 2, 2, 2, 2);
  ASSERT_EQ(c.size(), 64u);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) EXPECT_DOUBLE_EQ(c[i * 8 + j], (i + 1.0) * (j + 1.0)) << i << "," << j;
  }
}

TEST(PatchWhitening, EigenOrderDescendingAndSignConvention) {
  // [[2, 1], [1, 2]]: 3 for (1, 1)/sqrt2, 1 for (1, -1)/sqrt2 (a tie of magnitudes: the first is positive).
  const SymmetricEigen e = symmetric_eigen(std::vector<double>{2, 1, 1, 2}, 2);
  const double r = 1.0 / std::sqrt(2.0);
  // dsyevd in float64: residuals of a few ulps of the matrix norm (3); 1e-14 leaves room for ~30 of them.
  EXPECT_NEAR(e.values[0], 3.0, 1e-14);
  EXPECT_NEAR(e.values[1], 1.0, 1e-14);
  EXPECT_NEAR(e.vectors[0], r, 1e-14);
  EXPECT_NEAR(e.vectors[1], r, 1e-14);
  EXPECT_NEAR(e.vectors[2], r, 1e-14);
  EXPECT_NEAR(e.vectors[3], -r, 1e-14);
  // diag(2, 5): 5 first with e_2, then 2 with e_1.
  const SymmetricEigen f = symmetric_eigen(std::vector<double>{2, 0, 0, 5}, 2);
  EXPECT_EQ(f.values, (std::vector<double>{5, 2}));
  EXPECT_EQ(f.vectors, (std::vector<double>{0, 1, 1, 0}));
}

TEST(PatchWhitening, EigenvectorsSolveAndLargestComponentIsPositive) {
  std::mt19937 gen(7);
  std::normal_distribution<double> normal;
  const int d = 6;
  std::vector<double> b(d * d), a(d * d, 0.0);
  for (double& v : b) v = normal(gen);
  for (int i = 0; i < d; ++i) {
    for (int j = 0; j < d; ++j) {
      for (int k = 0; k < d; ++k) a[i * d + j] += b[i * d + k] * b[j * d + k];  // B B^T: symmetric
    }
  }
  const SymmetricEigen e = symmetric_eigen(a, d);
  for (int r = 0; r < d; ++r) {
    if (r > 0) {
      EXPECT_GE(e.values[r - 1], e.values[r]);
    }
    int largest = 0;
    for (int i = 0; i < d; ++i) {
      if (std::abs(e.vectors[r * d + i]) > std::abs(e.vectors[r * d + largest])) largest = i;
      double av = 0.0;
      for (int k = 0; k < d; ++k) av += a[i * d + k] * e.vectors[r * d + k];
      // |A v - lambda v| within float64 rounding of dsyevd: ~d ulps of ||A|| (~30 here); 1e-10 is far above.
      EXPECT_NEAR(av, e.values[r] * e.vectors[r * d + i], 1e-10);
    }
    EXPECT_GT(e.vectors[r * d + largest], 0.0) << "eigenvector " << r;
  }
}

TEST(PatchWhitening, WeightsByHand) {
  // diag(4, 1), eps 0: rows (1/2, 0), (0, 1), then their negatives; eps 5: 1/sqrt(9) and 1/sqrt(6).
  EXPECT_EQ(whitening_weights(std::vector<double>{4, 0, 0, 1}, 2, 0.0),
            (std::vector<double>{0.5, 0, 0, 1, -0.5, 0, 0, -1}));
  const std::vector<double> w = whitening_weights(std::vector<double>{4, 0, 0, 1}, 2, 5.0);
  EXPECT_DOUBLE_EQ(w[0], 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(w[3], 1.0 / std::sqrt(6.0));
  EXPECT_DOUBLE_EQ(w[4], -1.0 / 3.0);
  EXPECT_DOUBLE_EQ(w[7], -1.0 / std::sqrt(6.0));
}

// The second moment of the first d outputs of the whitening conv (weights w) over every patch of the images:
// computed from the patches directly, independently of patch_covariance.
std::vector<double> whitened_covariance(const std::vector<float>& images, int count, int channels, int size,
                                        int kernel, const std::vector<double>& w) {
  const int d = channels * kernel * kernel;
  std::vector<double> sum(d * d, 0.0), p(d), z(d);
  int n = 0;
  for (int i = 0; i < count; ++i) {
    for (int y = 0; y + kernel <= size; ++y) {
      for (int x = 0; x + kernel <= size; ++x) {
        for (int c = 0; c < channels; ++c) {
          for (int dy = 0; dy < kernel; ++dy) {
            for (int dx = 0; dx < kernel; ++dx) {
              p[(c * kernel + dy) * kernel + dx] =
                  static_cast<double>(images[((i * channels + c) * size + y + dy) * size + x + dx]);
            }
          }
        }
        for (int r = 0; r < d; ++r) {
          z[r] = 0.0;
          for (int k = 0; k < d; ++k) z[r] += w[r * d + k] * p[k];
        }
        for (int r = 0; r < d; ++r) {
          for (int s = 0; s < d; ++s) sum[r * d + s] += z[r] * z[s];
        }
        ++n;
      }
    }
  }
  for (double& v : sum) v /= n;
  return sum;
}

// Correlated random images (neighbouring pixels and channels share terms, as in photographs), 3 channels.
std::vector<float> correlated_images(int count, int size, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> base((size + 1) * (size + 1)), images;
  for (int i = 0; i < count; ++i) {
    for (float& v : base) v = normal(gen);
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < size; ++y) {
        for (int x = 0; x < size; ++x) {
          const float smooth = base[y * (size + 1) + x] + base[(y + 1) * (size + 1) + x + 1];
          images.push_back(smooth * (1.0f + 0.3f * static_cast<float>(c)) + 0.2f * normal(gen));
        }
      }
    }
  }
  return images;
}

TEST(PatchWhitening, WhitenedPatchesHaveIdentityCovariance) {
  const int count = 20, size = 8, kernel = 2, d = 12;  // 20 images: two blocks of the parallel sum
  const std::vector<float> images = correlated_images(count, size, 3);
  const std::vector<double> cov = patch_covariance(images, count, 3, size, size, kernel);
  const std::vector<double> w = whitening_weights(cov, d, 0.0);
  ASSERT_EQ(w.size(), 2u * d * d);
  const std::vector<double> white = whitened_covariance(images, count, 3, size, kernel, w);
  // float64 throughout; the patches' condition number here is ~1e3 (the 0.2 noise against the shared
  // terms), so the rounding of dsyevd and of the sums is ~1e3 * d * 2^-52 ~ 3e-12: 1e-9 is a wide margin, and
  // any wrong order, transpose or scale misses by O(1).
  for (int r = 0; r < d; ++r) {
    for (int s = 0; s < d; ++s) EXPECT_NEAR(white[r * d + s], r == s ? 1.0 : 0.0, 1e-9) << r << "," << s;
  }
  // The second half of the filters is the negative of the first.
  for (int k = 0; k < d * d; ++k) EXPECT_EQ(w[d * d + k], -w[k]);
}

TEST(PatchWhitening, EpsShrinksEachDirectionByLambdaOverLambdaPlusEps) {
  const int count = 6, size = 6, kernel = 2, d = 12;
  const double eps = 0.5;
  const std::vector<float> images = correlated_images(count, size, 11);
  const std::vector<double> cov = patch_covariance(images, count, 3, size, size, kernel);
  const SymmetricEigen e = symmetric_eigen(cov, d);
  const std::vector<double> white =
      whitened_covariance(images, count, 3, size, kernel, whitening_weights(cov, d, eps));
  for (int r = 0; r < d; ++r) {
    for (int s = 0; s < d; ++s) {
      // As above: float64 rounding ~1e-12; the smallest eigenvalues here (~0.04) make the diagonal differ
      // from 1 by ~0.9, so the check sees eps.
      EXPECT_NEAR(white[r * d + s], r == s ? e.values[r] / (e.values[r] + eps) : 0.0, 1e-9) << r << "," << s;
    }
  }
  EXPECT_LT(e.values[d - 1] / (e.values[d - 1] + eps), 0.9);
}

TEST(PatchWhitening, BadInputsAreRefused) {
  const std::vector<float> image(9, 1.0f);
  EXPECT_THROW(patch_covariance(image, 1, 1, 3, 3, 4), Error);  // kernel larger than the image
  EXPECT_THROW(patch_covariance(image, 2, 1, 3, 3, 2), Error);  // 9 values for 2 images
  EXPECT_THROW(patch_covariance(image, 0, 1, 3, 3, 2), Error);
  EXPECT_THROW(whitening_weights(std::vector<double>{1, 2, 0, 1}, 2, 0.0), Error);   // not symmetric
  EXPECT_THROW(whitening_weights(std::vector<double>{1, 0, 0, -1}, 2, 0.1), Error);  // not PSD
  EXPECT_THROW(whitening_weights(std::vector<double>{1, 0, 0, 1}, 2, -1.0), Error);  // eps < 0
  EXPECT_THROW(whitening_weights(std::vector<double>{1, 0, 0}, 2, 0.0), Error);      // size
  EXPECT_THROW(whitening_weights(std::vector<double>{1, 0, 0, std::nan("")}, 2, 0.0), Error);
  // Constant images span one direction: eps = 0 cannot whiten the others; eps > 0 can.
  const std::vector<double> flat = patch_covariance(image, 1, 1, 3, 3, 2);
  EXPECT_THROW(whitening_weights(flat, 4, 0.0), Error);
  EXPECT_NO_THROW(whitening_weights(flat, 4, 5e-4));
}

}  // namespace
}  // namespace engine::layers
