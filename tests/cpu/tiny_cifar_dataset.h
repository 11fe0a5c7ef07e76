#pragma once
// The tiny toy of cnn_train_test_util.h's tiny_folder_dataset in CIFAR-10's binary format, for the tests that
// need the dataset in memory: a cifar10 dataset is read into memory, so cnn_train on CUDA takes the
// GPU-resident loader (which --cuda-graph needs), while a folder: dataset stays on disk and gets the staged
// loader (data/disk_images.h). Its own header, so that the many tests including cnn_train_test_util.h do not
// change with it.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/common/scratch_dirs.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps::testing {

// root/cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin: tiny_folder_dataset's 8x8 pictures, each pixel
// a 4x4 block of a 32x32 CIFAR record, labels 0..2 of CIFAR's 10 classes; `per_class` training images per
// class spread over the five batch files (each must hold one), and 4 test images per class.
inline std::string tiny_cifar_dataset(const std::string& name, int per_class = 16) {
  constexpr int kSide = 32, kPlane = kSide * kSide, kClasses = 3, kTrainFiles = 5;
  if (per_class * kClasses < kTrainFiles) throw std::runtime_error("tiny_cifar_dataset: too few images");
  const auto dir = engine::testing::scratch_path("cnn_engine_", name) / "cifar-10-batches-bin";
  std::filesystem::create_directories(dir);
  const auto record = [&](std::vector<char>& out, int label, int i) {
    out.push_back(static_cast<char>(label));
    for (int p = 0; p < 3 * kPlane; ++p) {
      const int channel = p / kPlane, y = p % kPlane / kSide, x = p % kSide;
      const int p8 = channel * 64 + y / 4 * 8 + x / 4;  // tiny_folder_dataset's pixel index
      out.push_back(static_cast<char>((channel == label ? 180 : 40) + (p8 * 7 + i * 13) % 50));
    }
  };
  const auto write = [&](const std::string& file, const std::vector<char>& bytes) {
    FILE* f = std::fopen((dir / file).c_str(), "wb");
    const bool ok = f != nullptr && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    if (f == nullptr || std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write " + file);
  };
  std::vector<char> train[kTrainFiles], test;
  for (int i = 0, n = 0; i < per_class; ++i) {
    for (int c = 0; c < kClasses; ++c) record(train[n++ % kTrainFiles], c, i);
  }
  for (int i = 0; i < 4; ++i) {
    for (int c = 0; c < kClasses; ++c) record(test, c, i);
  }
  for (int k = 0; k < kTrainFiles; ++k) write("data_batch_" + std::to_string(k + 1) + ".bin", train[k]);
  write("test_batch.bin", test);
  return dir.parent_path().string();
}

// tiny_folder_args's run on tiny_cifar_dataset(root): --dataset cifar10 --data-dir ROOT instead of
// --dataset folder:ROOT, the rest the same (fp32 among it: without_option(args, "--precision") for another).
inline std::vector<std::string> tiny_cifar_args(const std::string& root, const std::string& ckpt_dir,
                                                const std::string& model, int batch, int epochs) {
  std::vector<std::string> args = tiny_folder_args(root, ckpt_dir, model, batch, epochs);
  const auto dataset = std::find(args.begin(), args.end(), "--dataset");
  if (dataset == args.end() || dataset + 1 == args.end())
    throw std::logic_error("tiny_cifar_args: no --dataset");
  dataset[1] = "cifar10";
  args.insert(dataset + 2, {"--data-dir", root});
  return args;
}

// `args` without the option `flag` and the value after it (cnn_train refuses an option given twice).
inline std::vector<std::string> without_option(std::vector<std::string> args, const std::string& flag) {
  const auto at = std::find(args.begin(), args.end(), flag);
  if (at != args.end()) args.erase(at, at + (at + 1 != args.end() ? 2 : 1));
  return args;
}

}  // namespace engine::apps::testing
