#pragma once
// The idx format of MNIST and Fashion-MNIST: a big-endian header (2 zero bytes, a type byte 0x08 = unsigned
// byte, a dimension count), one big-endian u32 per dimension, then the values. Images are magic 2051
// (N x rows x cols), labels magic 2049 (N). Files may be raw or gzipped; gzip is detected by its magic bytes,
// and a name ending in ".gz" must be gzip.
//
// Both datasets use the same 4 file names in one folder: train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each optionally with ".gz".

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/split.h"

namespace engine::data {

// Where Debian's dataset-fashion-mnist installs the 4 files.
inline constexpr const char* kFashionMnistDebianDir = "/usr/share/datasets/fashion-mnist";

const std::vector<std::string>& mnist_class_names();          // "0" .. "9"
const std::vector<std::string>& fashion_mnist_class_names();  // "T-shirt/top" .. "Ankle boot"

// $MNIST_DIR when set, else user_data_dir("mnist") (data/data_home.h: ~/.cache/cnn_engine/mnist).
std::string default_mnist_root();

// The split from `root` (empty: default_mnist_root(), and kFashionMnistDebianDir for Fashion-MNIST). Throws
// engine::Error naming the file for a missing file, wrong magic, wrong dimension count, dimensions that
// disagree with the size, different image and label counts, a label outside 0..9, a bad ".gz".
Dataset load_mnist(const std::string& root, Split split);
Dataset load_fashion_mnist(const std::string& root, Split split);

// An images file and a labels file (raw or gzipped) with the given class names.
Dataset load_idx(const std::string& images_path, const std::string& labels_path,
                 const std::vector<std::string>& class_names);

// The in-memory layer: decompressed idx bytes of both files, named in messages by the two sources.
Dataset decode_idx(std::span<const std::uint8_t> images, const std::string& images_source,
                   std::span<const std::uint8_t> labels, const std::string& labels_source,
                   const std::vector<std::string>& class_names);

}  // namespace engine::data
