#include "layers/patch_whitening.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <lapacke.h>

#include "core/error.h"

namespace engine::layers {

namespace {

// Images per block of the sum: blocks are summed in parallel (OpenMP), then added in block order, so the
// result does not depend on the number of threads.
constexpr std::int64_t kImagesPerBlock = 16;

// Adds sum(p p^T) over the patches of one image to the upper triangle of `sum` (d x d). `columns` is scratch
// for the image's patch matrix, transposed (row i: element i of every patch), so each entry is one contiguous
// dot product; four partial sums let the compiler vectorize it without reassociating (no -ffast-math).
void add_image_moments(const float* image, int channels, int height, int width, int kernel,
                       std::vector<double>& columns, double* sum) {
  const int d = channels * kernel * kernel, rows = height - kernel + 1, cols = width - kernel + 1;
  const std::int64_t patches = std::int64_t{rows} * cols;
  columns.resize(static_cast<std::size_t>(d * patches));
  for (int c = 0; c < channels; ++c) {
    for (int dy = 0; dy < kernel; ++dy) {
      for (int dx = 0; dx < kernel; ++dx) {
        double* column = columns.data() + ((c * kernel + dy) * kernel + dx) * patches;
        for (int y = 0; y < rows; ++y) {
          const float* src = image + (static_cast<std::int64_t>(c) * height + y + dy) * width + dx;
          for (int x = 0; x < cols; ++x) column[y * cols + x] = static_cast<double>(src[x]);
        }
      }
    }
  }
  for (int i = 0; i < d; ++i) {
    const double* a = columns.data() + i * patches;
    for (int j = i; j < d; ++j) {
      const double* b = columns.data() + j * patches;
      double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
      std::int64_t k = 0;
      for (; k + 4 <= patches; k += 4) {
        s0 += a[k] * b[k];
        s1 += a[k + 1] * b[k + 1];
        s2 += a[k + 2] * b[k + 2];
        s3 += a[k + 3] * b[k + 3];
      }
      for (; k < patches; ++k) s0 += a[k] * b[k];
      sum[i * d + j] += (s0 + s1) + (s2 + s3);
    }
  }
}

}  // namespace

std::vector<double> patch_covariance(std::span<const float> images, std::int64_t count, int channels,
                                     int height, int width, int kernel) {
  ENGINE_CHECK(count > 0 && channels > 0 && kernel > 0,
               "patch_covariance: {} images of {} channels, kernel {}", count, channels, kernel);
  ENGINE_CHECK(kernel <= height && kernel <= width,
               "patch_covariance: kernel {} is larger than the {}x{} image", kernel, height, width);
  const std::int64_t image_size = std::int64_t{channels} * height * width;
  ENGINE_CHECK(static_cast<std::int64_t>(images.size()) == count * image_size,
               "patch_covariance: {} values for {} images of {}x{}x{}", images.size(), count, channels,
               height, width);
  const int d = channels * kernel * kernel;
  const std::int64_t blocks = (count + kImagesPerBlock - 1) / kImagesPerBlock;
  std::vector<double> partial(static_cast<std::size_t>(blocks * d * d), 0.0);
#pragma omp parallel
  {
    std::vector<double> columns;
#pragma omp for schedule(static)
    for (std::int64_t block = 0; block < blocks; ++block) {
      const std::int64_t end = std::min(count, (block + 1) * kImagesPerBlock);
      for (std::int64_t n = block * kImagesPerBlock; n < end; ++n) {
        add_image_moments(images.data() + n * image_size, channels, height, width, kernel, columns,
                          partial.data() + block * d * d);
      }
    }
  }
  std::vector<double> sum(static_cast<std::size_t>(d) * d, 0.0);
  for (std::int64_t block = 0; block < blocks; ++block) {
    for (int k = 0; k < d * d; ++k) sum[k] += partial[block * d * d + k];
  }
  const double patches = static_cast<double>(count) * (height - kernel + 1) * (width - kernel + 1);
  for (int i = 0; i < d; ++i) {
    for (int j = i; j < d; ++j) {
      sum[i * d + j] /= patches;
      sum[j * d + i] = sum[i * d + j];
    }
  }
  return sum;
}

SymmetricEigen symmetric_eigen(std::span<const double> matrix, int d) {
  ENGINE_CHECK(d > 0 && static_cast<std::int64_t>(matrix.size()) == std::int64_t{d} * d,
               "symmetric_eigen: {} values for a {}x{} matrix", matrix.size(), d, d);
  // LAPACK overwrites the matrix with the eigenvectors as columns (row-major layout: a[i*d + j] is component
  // i of eigenvector j), eigenvalues ascending.
  std::vector<double> a(matrix.begin(), matrix.end());
  std::vector<double> w(static_cast<std::size_t>(d));
  const lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', d, a.data(), d, w.data());
  ENGINE_CHECK(info == 0, "symmetric_eigen: LAPACKE_dsyevd failed with info {} ({})", info,
               info < 0 ? "an illegal argument" : "the algorithm did not converge");
  SymmetricEigen e;
  e.values.resize(static_cast<std::size_t>(d));
  e.vectors.resize(static_cast<std::size_t>(d) * d);
  for (int r = 0; r < d; ++r) {
    const int col = d - 1 - r;  // descending
    e.values[r] = w[col];
    int largest = 0;
    for (int i = 1; i < d; ++i) {
      if (std::abs(a[i * d + col]) > std::abs(a[largest * d + col])) largest = i;
    }
    const double sign = a[largest * d + col] < 0.0 ? -1.0 : 1.0;
    for (int i = 0; i < d; ++i) e.vectors[r * d + i] = sign * a[i * d + col];
  }
  return e;
}

std::vector<double> whitening_weights(std::span<const double> covariance, int d, double eps) {
  ENGINE_CHECK(eps >= 0.0 && std::isfinite(eps), "whitening_weights: eps {} must be >= 0", eps);
  ENGINE_CHECK(d > 0 && static_cast<std::int64_t>(covariance.size()) == std::int64_t{d} * d,
               "whitening_weights: {} values for a {}x{} matrix", covariance.size(), d, d);
  double largest = 0.0;
  for (const double v : covariance) {
    ENGINE_CHECK(std::isfinite(v), "whitening_weights: the covariance holds {}", v);
    largest = std::max(largest, std::abs(v));
  }
  for (int i = 0; i < d; ++i) {
    for (int j = i + 1; j < d; ++j) {
      ENGINE_CHECK(covariance[i * d + j] == covariance[j * d + i],
                   "whitening_weights: the covariance is not symmetric at ({}, {})", i, j);
    }
  }
  const SymmetricEigen e = symmetric_eigen(covariance, d);
  // A second-moment matrix is positive semi-definite: an eigenvalue below -d * 1e-12 * max|C| is more than
  // float64 rounding of dsyevd (backward error ~ d * 2^-52 * ||C||) and means the input is not a covariance.
  const double rounding = d * 1e-12 * largest;
  std::vector<double> weights(static_cast<std::size_t>(2) * d * d);
  for (int r = 0; r < d; ++r) {
    const double lambda = e.values[r];
    ENGINE_CHECK(lambda >= -rounding, "whitening_weights: eigenvalue {} < 0: not a covariance matrix",
                 lambda);
    ENGINE_CHECK(lambda + eps > rounding,
                 "whitening_weights: eigenvalue {} + eps {} is not above rounding: the patches span fewer "
                 "than {} directions (use eps > 0)",
                 lambda, eps, d);
    const double scale = 1.0 / std::sqrt(lambda + eps);
    for (int i = 0; i < d; ++i) {
      weights[r * d + i] = e.vectors[r * d + i] * scale;
      weights[(d + r) * d + i] = -e.vectors[r * d + i] * scale;
    }
  }
  return weights;
}

}  // namespace engine::layers
