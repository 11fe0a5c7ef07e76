// What a newcomer met on a first afternoon (issue 44), run as a user would: every output path checked before
// any data is read (before, --confusion into a missing folder failed after the whole run had trained), an
// output that fails after training keeps the checkpoint, a new run into a folder of another run's checkpoints
// refused unless told (before, it overwrote them, and --resume auto then continued the older run), a failed
// run leaves no folder holding only cnn_train.lock, and the messages of refused input: no source location
// (but with --verbose), a flag given twice said plainly, a missing MNIST folder naming --download, a note for
// --eval-only on another dataset.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::count_of;
using testing::file_bytes;
using testing::run_train;
using testing::with_args;

std::vector<std::string> tiny(const std::string& root, const std::string& dir, int epochs) {
  return with_args({"--cpu"}, testing::tiny_folder_args(root, dir, "cnn3", 8, epochs));
}

TEST(CnnTrainNewcomer, EveryOutputPathIsCheckedBeforeAnyDataIsRead) {
  // The dataset does not exist either: a message about the output proves it was checked first.
  const std::string dir = testing::temp_dir("newcomer_outputs");
  const std::string missing = dir + "/no_such_folder";
  for (const auto& [flag, file] :
       std::vector<std::pair<std::string, std::string>>{{"--metrics", "m.jsonl"},
                                                        {"--plot", "p.png"},
                                                        {"--trace", "t.json"},
                                                        {"--confusion", "c.png"},
                                                        {"--misclassified", "w.png"}}) {
    const std::string path = missing + "/" + file;
    const testing::RunResult r = run_train(
        {"--cpu", "--dataset", "folder:" + dir + "/no_data", "--checkpoint-dir", dir + "/ckpt", flag, path});
    EXPECT_EQ(r.exit_code, 2) << flag << "\n" << r.output;
    EXPECT_NE(r.output.find(flag + " '" + path + "': its folder, '" + missing + "', does not exist"),
              std::string::npos)
        << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir + "/ckpt")) << flag;
  }
  // A folder named as the file.
  const testing::RunResult r = run_train(
      {"--cpu", "--dataset", "folder:" + dir + "/no_data", "--metrics", dir, "--checkpoint-dir", ""});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--metrics '" + dir + "': '" + dir + "' is a folder"), std::string::npos)
      << r.output;
}

TEST(CnnTrainNewcomer, AnOutputThatFailsAfterTrainingKeepsTheCheckpoint) {
  const std::string root = testing::tiny_folder_dataset("newcomer_full_data");
  const std::string dir = testing::temp_dir("newcomer_full");
  // Passes the check (the file exists and is writable) and fails when written: /dev/full.
  const std::string picture = dir + "/c.png";
  std::filesystem::create_symlink("/dev/full", picture);
  const testing::RunResult r = run_train(with_args(tiny(root, dir + "/ckpt", 1), {"--confusion", picture}));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(picture + ": write failed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Epoch 1 |"), std::string::npos) << r.output;
  const optim::SafetensorsFile saved = optim::SafetensorsFile::read(dir + "/ckpt/epoch1.safetensors");
  EXPECT_EQ(saved.metadata().at("epoch"), "1");
}

// A trace is written during training: a disk that fails it (tests/common/io_error_shim.cpp: the first write
// of the trace's file fails with EIO) is a warning, and the run saves its checkpoint (before, it ended with
// exit 1 and nothing saved).
TEST(CnnTrainNewcomer, ATraceThatCannotBeWrittenIsAWarning) {
  const std::string root = testing::tiny_folder_dataset("newcomer_trace_data");
  const std::string dir = testing::temp_dir("newcomer_trace");
  const std::string shim =
      (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libio_error_shim.so").string();
  std::vector<std::string> words = {"ENGINE_IO_FAULT_PATH=newcomer_t.json", "ENGINE_IO_FAULT_OP=write",
                                    "ENGINE_IO_FAULT_NTH=1",
                                    testing::shell_quote(testing::program_path("cnn_train"))};
  for (const std::string& a :
       with_args(tiny(root, dir + "/ckpt", 1), {"--trace", dir + "/newcomer_t.json", "--trace-steps", "1"}))
    words.push_back(testing::shell_quote(a));
  std::string command = "LD_PRELOAD=";
  command.append(testing::shell_quote(shim));
  for (const std::string& w : words) command.append(" ").append(w);
  const testing::RunResult r = testing::run_command(command);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("io_error_shim: write("), std::string::npos) << "the fault was met\n" << r.output;
  EXPECT_NE(r.output.find("; training goes on without the trace"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/ckpt/epoch1.safetensors")) << r.output;
}

TEST(CnnTrainNewcomer, ANewRunIntoAFolderOfCheckpointsIsRefusedAndResumeAutoTakesTheLastRuns) {
  const std::string root = testing::tiny_folder_dataset("newcomer_folder_data");
  const std::string dir = testing::temp_dir("newcomer_folder");
  ASSERT_EQ(run_train(tiny(root, dir, 3)).exit_code, 0);  // run A: epoch3.safetensors
  const std::string a_epoch3 = file_bytes(dir + "/epoch3.safetensors");
  testing::RunResult r = run_train(with_args(tiny(root, dir, 1), {"--label-smoothing", "0.1"}));  // run B
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--checkpoint-dir '" + dir +
                          "' holds the checkpoints of an earlier run (epoch3.safetensors, last.safetensors): "
                          "continue that run with --resume auto, replace its checkpoints with --overwrite"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Epoch 1 |"), std::string::npos) << r.output;
  EXPECT_EQ(file_bytes(dir + "/epoch3.safetensors"), a_epoch3) << "run A's checkpoint is untouched";
  EXPECT_EQ(run_train(with_args(tiny(root, dir, 1), {"--overwrite", "--resume", "auto"})).exit_code, 2);

  // Told to overwrite: run A's checkpoints go, and --resume auto continues run B (its epoch 1).
  r = run_train(with_args(tiny(root, dir, 1), {"--label-smoothing", "0.1", "--overwrite"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/epoch3.safetensors"));
  r = run_train(with_args(tiny(root, dir, 2), {"--label-smoothing", "0.1", "--resume", "auto"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from " + dir + "/"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Epoch 2 |"), std::string::npos) << r.output;
  EXPECT_EQ(count_of(r.output, "Epoch "), 1u) << "one epoch trained after run B's first\n" << r.output;
}

TEST(CnnTrainNewcomer, AFailedRunLeavesNoFolderHoldingOnlyTheLock) {
  const std::string root = testing::tiny_folder_dataset("newcomer_lock_data");
  const std::string parent = testing::temp_dir("newcomer_lock");
  const std::string dir = parent + "/ckpt";
  // Refused after the folder is locked (each rank sees only its share of the test set).
  const testing::RunResult r =
      run_train(with_args(tiny(root, dir, 1), {"--nproc", "2", "--confusion", parent + "/c.png"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--confusion and --misclassified need one process"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir)) << "a folder holding only cnn_train.lock was left";
  // A folder that was there stays, without the lock file; the next run takes it.
  std::filesystem::create_directories(dir);
  EXPECT_EQ(
      run_train(with_args(tiny(root, dir, 1), {"--nproc", "2", "--confusion", parent + "/c.png"})).exit_code,
      2);
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  EXPECT_EQ(run_train(tiny(root, dir, 1)).exit_code, 0);
}

TEST(CnnTrainNewcomer, RefusedInputReadsWithoutSourceLocationsButWithVerbose) {
  const std::string dir = testing::temp_dir("newcomer_verbose");
  const std::vector<std::string> bad = {"--cpu", "--dataset", "folder:" + dir + "/none", "--checkpoint-dir",
                                        ""};
  testing::RunResult r = run_train(bad);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.find("[at "), std::string::npos) << r.output;
  r = run_train(with_args(bad, {"--verbose"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(" [at data/"), std::string::npos) << r.output;
  r = testing::run_program("cnn_predict", {"--checkpoint", dir + "/none.safetensors", dir + "/x.png"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.find("[at "), std::string::npos) << r.output;
}

TEST(CnnTrainNewcomer, FriendlierRefusals) {
  const std::string dir = testing::temp_dir("newcomer_refusals");
  // A flag given twice: CLI11's "--epochs: At Most 1 required but received 2", plainly.
  testing::RunResult r = run_train({"--dataset", "mnist", "--epochs", "1", "--epochs", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cnn_train: --epochs is given 2 times; give it once"), std::string::npos)
      << r.output;
  // A missing MNIST folder names --download.
  r = run_train({"--cpu", "--dataset", "mnist", "--data-dir", dir + "/mnist", "--checkpoint-dir", ""});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("mnist: " + dir +
                          "/mnist does not exist (--data-dir, or the default folder): add "
                          "--download to fetch it there"),
            std::string::npos)
      << r.output;
  // An ONNX file given as a checkpoint (a ModelProto starts with its ir_version field, byte 0x08).
  const std::string onnx = dir + "/x.onnx";
  {
    std::ofstream out(onnx, std::ios::binary);
    out << std::string(
               "\x08\x08\x12\x07pytorch\x1a\x03"
               "2.5",
               15)
        << std::string(64, 'x');
  }
  r = testing::run_program("cnn_export_onnx", {"--checkpoint", onnx, "--output", dir + "/out.onnx"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'" + onnx + "' is not a checkpoint (an ONNX file?)"), std::string::npos)
      << r.output;
}

TEST(CnnTrainNewcomer, EvalOnlyOnAnotherDatasetSaysSo) {
  const std::string root = testing::tiny_folder_dataset("newcomer_eval_data");
  const std::string dir = testing::temp_dir("newcomer_eval");
  ASSERT_EQ(run_train(tiny(root, dir, 1)).exit_code, 0);
  // The same images and class count, other classes.
  const std::string other = testing::temp_dir("newcomer_eval_other");
  std::filesystem::copy(root, other, std::filesystem::copy_options::recursive);
  for (const char* split : {"/train/", "/test/"})
    std::filesystem::rename(other + split + "class_c", other + split + "class_z");
  testing::RunResult r =
      run_train({"--cpu", "--dataset", "folder:" + other, "--eval-only", dir + "/epoch1.safetensors"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cnn_train: note: --eval-only: " + dir +
                          "/epoch1.safetensors was trained on folder:" + root +
                          " (3 classes (class_a, class_b, class_c)); evaluating it on folder:" + other +
                          " (3 classes (class_a, class_b, class_z))"),
            std::string::npos)
      << r.output;
  r = run_train({"--cpu", "--dataset", "folder:" + root, "--eval-only", dir + "/epoch1.safetensors"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("note:"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine::apps
