// What a checkpoint folder holds must be the run's (issue 28, defects 3 and 4): --resume refuses a checkpoint
// of another dataset, model or class count, naming both sides (before, a Fashion-MNIST checkpoint continued
// on MNIST without a word, and another shape failed naming a model the user never chose); and two runs never
// share a folder: the second is refused naming the first's pid (before, both exited 0 and the later one's
// checkpoints replaced the other's), while a killed run leaves no lock behind.

#include <filesystem>
#include <signal.h>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/environment.h"
#include "tests/cpu/cnn_train_restart_test_util.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::run_train;
using testing::with_args;

std::vector<std::string> tiny(const std::string& root, const std::string& dir, int epochs) {
  return with_args({"--cpu"}, testing::tiny_folder_args(root, dir, "cnn3", 8, epochs));
}

// A copy of tiny_folder_dataset `root` whose class folder class_c is renamed `last` (same size and count) or,
// with `extra`, a fourth class added.
std::string other_classes(const std::string& root, const std::string& name, const std::string& last,
                          bool extra) {
  std::string copy = testing::temp_dir(name);  // not const: moved out
  std::filesystem::copy(root, copy, std::filesystem::copy_options::recursive);
  for (const char* split : {"/train/", "/test/"}) {
    if (extra) {
      std::filesystem::copy(copy + split + "class_c", copy + split + last,
                            std::filesystem::copy_options::recursive);
    } else {
      std::filesystem::rename(copy + split + "class_c", copy + split + last);
    }
  }
  return copy;
}

TEST(CnnTrainCheckpointDir, ResumeRefusesAFolderDatasetOfOtherClassesNamingBoth) {
  const std::string root = testing::tiny_folder_dataset("match_classes");
  const std::string dir = testing::temp_dir("match_classes_out");
  ASSERT_EQ(run_train(tiny(root, dir, 1)).exit_code, 0);
  // Same image size and class count: before, training continued on these classes without a word.
  const std::string renamed = other_classes(root, "match_classes_renamed", "class_z", false);
  testing::RunResult r = run_train(with_args(tiny(renamed, dir, 2), {"--resume", "auto"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("was trained on folder:" + root +
                          " (3 classes (class_a, class_b, class_c)), this run "
                          "is on folder:" +
                          renamed + " (3 classes (class_a, class_b, class_z))"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("or give another --checkpoint-dir"), std::string::npos) << r.output;
  // A fourth class: before, the load failed on the last layer's shape.
  const std::string four = other_classes(root, "match_classes_four", "class_d", true);
  r = run_train(with_args(tiny(four, dir, 2), {"--resume", dir + "/last.safetensors"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("this run is on folder:" + four + " (4 classes"), std::string::npos) << r.output;
  // The same classes at another path (a moved folder) continue.
  const std::string moved = testing::temp_dir("match_classes_moved");
  std::filesystem::copy(root, moved, std::filesystem::copy_options::recursive);
  r = run_train(with_args(tiny(moved, dir, 2), {"--resume", "auto"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Epoch 2 |"), std::string::npos) << r.output;
}

TEST(CnnTrainCheckpointDir, ResumeAutoRefusesACheckpointOfAnotherModelNamingBoth) {
  const std::string root = testing::tiny_folder_dataset("match_model");
  const std::string dir = testing::temp_dir("match_model_out");
  ASSERT_EQ(run_train(tiny(root, dir, 1)).exit_code, 0);
  auto args = with_args(tiny(root, dir, 2), {"--resume", "auto"});
  *(std::find(args.begin(), args.end(), "--model") + 1) = "vgg6";
  const testing::RunResult r = run_train(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--resume auto: " + dir + "/"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("was trained as model cnn3, this run's --model is vgg6"), std::string::npos)
      << r.output;
}

// The case: a Fashion-MNIST checkpoint and an MNIST run (the same 1x28x28 images and 10 classes);
// and --eval-only of it on 3x32x32 images.
TEST(CnnTrainCheckpointDir, ResumeAutoRefusesAFashionMnistCheckpointOnMnist) {
  const std::string fashion = "/usr/share/datasets/fashion-mnist", mnist = engine::testing::mnist_dir();
  if (!std::filesystem::exists(fashion + "/t10k-labels-idx1-ubyte.gz") || mnist.empty())
    GTEST_SKIP() << "needs Debian's dataset-fashion-mnist and MNIST (tests/common/environment.h)";
  const std::string dir = testing::temp_dir("match_mnist_out");
  const std::vector<std::string> small = {
      "--cpu", "--limit-train", "64", "--limit-test", "32", "--checkpoint-dir", dir, "--resume", "auto"};
  testing::RunResult r =
      run_train(with_args({"--dataset", "fashion-mnist", "--data-dir", fashion, "--epochs", "1"}, small));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_train(with_args({"--dataset", "mnist", "--data-dir", mnist, "--epochs", "2"}, small));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("was trained on fashion-mnist (10 classes (T-shirt/top"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("this run is on mnist (10 classes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("use --dataset fashion-mnist"), std::string::npos) << r.output;
  // --eval-only on images of another shape: named before the model is built (it named mnist_cnn's Linear).
  const std::string root = testing::tiny_folder_dataset("match_mnist_eval");
  r = run_train({"--cpu", "--dataset", "folder:" + root, "--eval-only", dir + "/epoch1.safetensors"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("was trained on 1x28x28 images (channels x height x width) of fashion-mnist, this "
                          "run's folder:" +
                          root + " has 3x32x32"),
            std::string::npos)
      << r.output;
}

TEST(CnnTrainCheckpointDir, ASecondRunIntoTheFolderIsRefusedNamingTheFirstsPid) {
  const std::string root = testing::tiny_folder_dataset("lock_data");
  const std::string dir = testing::temp_dir("lock_out");
  testing::LiveProcess first(with_args({testing::program_path("cnn_train")}, tiny(root, dir, 100000)),
                             {"OMP_NUM_THREADS=1"});
  ASSERT_TRUE(first.wait_for("Epoch 1 |", 120)) << first.output();
  testing::RunResult second = run_train(tiny(root, dir, 1));
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_NE(second.output.find("another cnn_train is training into this folder (pid " +
                               std::to_string(first.pid()) + " on host "),
            std::string::npos)
      << second.output;
  second = run_train(with_args(tiny(root, dir, 1), {"--resume", "auto"}));
  EXPECT_EQ(second.exit_code, 2) << "--resume auto is refused before it reads the folder\n" << second.output;
  // Killed (no chance to clean up): the kernel released the lock with the process.
  first.signal(SIGKILL);
  EXPECT_EQ(first.finish(60), 128 + SIGKILL);
  const testing::RunResult third = run_train(tiny(root, dir, 1));
  EXPECT_EQ(third.exit_code, 0) << third.output;
}

}  // namespace
}  // namespace engine::apps
