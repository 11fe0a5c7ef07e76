#include "kernels/cpu/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace engine::cpu {
namespace {

void check_args(const char* what, const std::int32_t* labels, int n, int k, double label_smoothing) {
  ENGINE_CHECK(n > 0 && k > 0, "{}: batch size and class count must be positive, got n={} k={}", what, n, k);
  ENGINE_CHECK(label_smoothing >= 0.0 && label_smoothing < 1.0,
               "{}: label_smoothing must be in [0, 1), got {}", what, label_smoothing);
  for (int i = 0; i < n; ++i) {
    ENGINE_CHECK(labels[i] >= 0 && labels[i] < k, "{}: label of sample {} is {}, outside [0, {})", what, i,
                 labels[i], k);
  }
}

// log(sum_j exp(z_j)) computed as m + log(sum_j exp(z_j - m)) with m the row max: every exp is <= 1.
template <typename T>
double logsumexp(const T* z, int k) {
  double m = static_cast<double>(z[0]);
  for (int j = 1; j < k; ++j) m = std::max(m, static_cast<double>(z[j]));
  double sum = 0.0;
  for (int j = 0; j < k; ++j) sum += std::exp(static_cast<double>(z[j]) - m);
  return m + std::log(sum);
}

}  // namespace

template <typename T>
double softmax_cross_entropy_forward(const T* logits, const std::int32_t* labels, int n, int k,
                                     double label_smoothing) {
  check_args("softmax_cross_entropy_forward", labels, n, k, label_smoothing);
  const double eps = label_smoothing;
  double total = 0.0;
  for (int i = 0; i < n; ++i) {
    const T* z = logits + static_cast<std::int64_t>(i) * k;
    double row_sum = 0.0;
    for (int j = 0; j < k; ++j) row_sum += static_cast<double>(z[j]);
    total += logsumexp(z, k) - (1.0 - eps) * static_cast<double>(z[labels[i]]) - eps / k * row_sum;
  }
  return total / n;
}

template <typename T>
void softmax_cross_entropy_backward(const T* logits, const std::int32_t* labels, int n, int k,
                                    double label_smoothing, T* dlogits, double dloss) {
  check_args("softmax_cross_entropy_backward", labels, n, k, label_smoothing);
  const double eps = label_smoothing;
  const double scale = dloss / n;
  for (int i = 0; i < n; ++i) {
    const std::int64_t row = static_cast<std::int64_t>(i) * k;
    const double lse = logsumexp(logits + row, k);
    for (int j = 0; j < k; ++j) {
      const double softmax = std::exp(static_cast<double>(logits[row + j]) - lse);
      const double q = (j == labels[i] ? 1.0 - eps : 0.0) + eps / k;
      dlogits[row + j] = static_cast<T>((softmax - q) * scale);
    }
  }
}

template <typename T>
void predict_classes(const T* logits, int n, int k, std::int32_t* predicted) {
  ENGINE_CHECK(n > 0 && k > 0, "predict_classes: batch size and class count must be positive, got n={} k={}",
               n, k);
  for (int i = 0; i < n; ++i) {
    const T* z = logits + static_cast<std::int64_t>(i) * k;
    int best = 0;
    for (int j = 1; j < k; ++j) {
      if (std::isnan(z[best])) break;  // a NaN is the maximum; the first one stays
      if (z[j] > z[best] || std::isnan(z[j])) best = j;
    }
    predicted[i] = best;
  }
}

template <typename T>
std::int64_t count_correct(const T* logits, const std::int32_t* labels, int n, int k) {
  std::vector<std::int32_t> predicted(static_cast<std::size_t>(std::max(n, 0)));
  predict_classes(logits, n, k, predicted.data());
  std::int64_t correct = 0;
  for (int i = 0; i < n; ++i) correct += predicted[i] == labels[i] ? 1 : 0;
  return correct;
}

template double softmax_cross_entropy_forward<float>(const float*, const std::int32_t*, int, int, double);
template double softmax_cross_entropy_forward<double>(const double*, const std::int32_t*, int, int, double);
template void softmax_cross_entropy_backward<float>(const float*, const std::int32_t*, int, int, double,
                                                    float*, double);
template void softmax_cross_entropy_backward<double>(const double*, const std::int32_t*, int, int, double,
                                                     double*, double);
template void predict_classes<float>(const float*, int, int, std::int32_t*);
template void predict_classes<double>(const double*, int, int, std::int32_t*);
template std::int64_t count_correct<float>(const float*, const std::int32_t*, int, int);
template std::int64_t count_correct<double>(const double*, const std::int32_t*, int, int);

}  // namespace engine::cpu
