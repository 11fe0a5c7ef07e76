#pragma once
// Softmax cross-entropy with label smoothing, the CPU reference (torch.nn.functional.cross_entropy with
// reduction='mean' and `label_smoothing`).
//
// logits z: [n, k]; labels: [n] int32 in [0, k). With eps = label_smoothing in [0, 1), the target of row i
// is q = (1 - eps) * onehot(label_i) + eps / k, and
//
//     loss = (1/n) * sum_i  -sum_j q_j * log softmax(z_i)_j
//          = (1/n) * sum_i  [ logsumexp(z_i) - (1 - eps) * z_i[label_i] - (eps / k) * sum_j z_i[j] ]
//
// (the second line since sum_j q_j = 1). logsumexp subtracts the row max before exp, so large logits never
// overflow. Every sum is in double; the loss is returned as double whatever T is.
//
// Backward: dlogits = (softmax(z) - q) / n * dloss. It OVERWRITES dlogits.
//
// Labels outside [0, k) throw engine::Error naming the sample and the value; eps outside [0, 1) throws.

#include <cstdint>

namespace engine::cpu {

template <typename T>
double softmax_cross_entropy_forward(const T* logits, const std::int32_t* labels, int n, int k,
                                     double label_smoothing = 0.0);

template <typename T>
void softmax_cross_entropy_backward(const T* logits, const std::int32_t* labels, int n, int k,
                                    double label_smoothing, T* dlogits, double dloss = 1.0);

// predicted[i] = argmax_j z_i[j]; ties go to the first (lowest) class, as torch.argmax. A NaN counts as the
// maximum (the first NaN wins), so a diverged row never counts as correct by accident of its other entries.
template <typename T>
void predict_classes(const T* logits, int n, int k, std::int32_t* predicted);

// How many rows have predict_classes(...)[i] == labels[i]. Labels are not range-checked here beyond what
// the comparison needs: an out-of-range label simply never matches.
template <typename T>
std::int64_t count_correct(const T* logits, const std::int32_t* labels, int n, int k);

}  // namespace engine::cpu
