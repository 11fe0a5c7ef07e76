#pragma once
// Patch whitening (airbench94's first convolution): a k x k convolution whose 2 * C*k*k filters are the
// eigenvectors of the training patches' second-moment matrix scaled by 1 / sqrt(eigenvalue + eps), and their
// negatives, so that the layer's outputs on training patches are decorrelated with (nearly) unit variance.
//
// Pure host math in float64 (the eigendecomposition through LAPACK's dsyevd): no device, no Model. The
// trainer's wiring is apps/train/whiten_init.h.
//
// Conventions (the tests pin them):
//  - a patch's element order is the convolution weight's [in][kh][kw]: index c*k*k + dy*k + dx;
//  - the "covariance" is airbench94's: the uncentred second moment sum(p p^T) / n over every k x k patch at
//    stride 1 without padding (the images are normalized, so their mean is near zero);
//  - eigenpairs in descending eigenvalue order; each eigenvector's sign is chosen so that its component of
//    largest magnitude is positive (the first such component on a tie), since LAPACK's sign is arbitrary;
//  - the weights are [2d, d] row-major (d = C*k*k): row i < d is eigenvector i / sqrt(lambda_i + eps), row
//    d + i its negative.

#include <cstdint>
#include <span>
#include <vector>

namespace engine::layers {

// The d x d (row-major, symmetric) second moment of all k x k patches of `count` images of shape
// [channels, height, width] (float, CHW, one after the other in `images`), summed in float64 over OpenMP
// threads in a fixed order (the same bits for any thread count). Throws engine::Error when the sizes disagree
// or the kernel is larger than the image.
std::vector<double> patch_covariance(std::span<const float> images, std::int64_t count, int channels,
                                     int height, int width, int kernel);

struct SymmetricEigen {
  std::vector<double> values;   // d, descending
  std::vector<double> vectors;  // d x d row-major: row i is the unit eigenvector of values[i]
};

// The eigendecomposition of a d x d symmetric matrix (its upper triangle is read), with the order and sign
// conventions above. Throws engine::Error with LAPACK's info when dsyevd fails.
SymmetricEigen symmetric_eigen(std::span<const double> matrix, int d);

// The whitening convolution's weights [2d, d] from the d x d patch covariance (conventions above). eps > 0
// keeps directions of (near) zero variance finite: airbench94 uses 5e-4. Throws engine::Error on a
// non-symmetric matrix, a negative eigenvalue beyond rounding, or eps < 0.
std::vector<double> whitening_weights(std::span<const double> covariance, int d, double eps);

}  // namespace engine::layers
