// cnn_train on a disk that fails (label cpu): one file call made to fail with EIO by an LD_PRELOAD library
// (tests/common/io_error_shim.cpp) at a checkpoint's write, fsync, close, rename or its folder's flush, at a
// checkpoint's read and at the data set's read. Each: a clear error naming the file and the failure, exit 1
// at a save (2 at a read before training: input), never a signal; at a save the checkpoint before it intact,
// and --resume auto then finishing with the weights of an uninterrupted run.

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "optim/checkpoint.h"
#include "optim/safetensors.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::run_command;
using testing::run_train;
using testing::shell_quote;
using testing::with_args;

// <build>/tests/libio_error_shim.so, beside this test binary.
std::string shim_path() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libio_error_shim.so").string();
}

struct Fault {
  std::string path_part;  // the calls on paths containing this count
  std::string op;         // open, read, write, fsync, rename, close
  long nth = 0;           // the call that fails (0: none, count only)
};

// cnn_train ARGS with the shim loaded; `counts` (when not empty) gets each kind's count of calls.
testing::RunResult run_with_fault(const std::vector<std::string>& args, const Fault& fault,
                                  const std::string& counts = "") {
  std::string command =
      "LD_PRELOAD=" + shell_quote(shim_path()) + " ENGINE_IO_FAULT_PATH=" + shell_quote(fault.path_part) +
      " ENGINE_IO_FAULT_OP=" + fault.op + " ENGINE_IO_FAULT_NTH=" + std::to_string(fault.nth);
  if (!counts.empty()) command += " ENGINE_IO_FAULT_COUNTS=" + shell_quote(counts);
  command += " " + shell_quote(testing::program_path("cnn_train"));
  for (const std::string& a : args) command += " " + shell_quote(a);
  return run_command(command);
}

std::map<std::string, long> read_counts(const std::string& file) {
  std::map<std::string, long> out;
  std::ifstream in(file);
  std::string op;
  long n = 0;
  while (in >> op >> n) out[op] = n;
  return out;
}

// Two epochs of the tiny folder run, a save after each: epoch1 and last, then epoch2 and last.
std::vector<std::string> run_args(const std::string& root, const std::string& dir) {
  return with_args({"--cpu", "--save-every", "1"}, testing::tiny_folder_args(root, dir, "cnn3", 8, 2));
}

bool has_partial_file(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return true;
  return false;
}

void expect_same_data(const std::string& a, const std::string& b) {
  for (const testing::TensorDifference& d : testing::checkpoint_differences(a, b))
    EXPECT_EQ(d.worst, 0.0) << d.name << ": " << a << " vs " << b;
}

class CnnTrainIoError : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = testing::tiny_folder_dataset("io_error_data");
    reference_dir_ = testing::temp_dir("io_error_reference");
    const std::string counts = testing::temp_dir("io_error_counts") + "/counts";
    const testing::RunResult r =
        run_with_fault(run_args(root_, reference_dir_), {".safetensors", "none", 0}, counts);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    counts_ = read_counts(counts);
  }

  // The fault at the second save (epoch2): exit 1 naming `named` and EIO; epoch1 intact and no partial file;
  // then --resume auto finishes with the uninterrupted weights.
  void expect_survived_at_second_save(const std::string& name, const Fault& fault, const std::string& named) {
    const std::string dir = testing::temp_dir("io_error_" + name);
    const testing::RunResult r = run_with_fault(run_args(root_, dir), fault);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("Input/output error"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(named), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(dir + "/epoch2.safetensors"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("io_error_shim: " + fault.op), std::string::npos) << "the fault was not met\n"
                                                                              << r.output;
    EXPECT_FALSE(has_partial_file(dir));
    const optim::SafetensorsFile epoch1 = optim::SafetensorsFile::read(dir + "/epoch1.safetensors");
    EXPECT_NO_THROW(optim::verify_checkpoint_checksum(epoch1));
    expect_same_data(reference_dir_ + "/epoch1.safetensors", dir + "/epoch1.safetensors");

    const testing::RunResult resumed = run_train(with_args(run_args(root_, dir), {"--resume", "auto"}));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    expect_same_data(reference_dir_ + "/epoch2.safetensors", dir + "/epoch2.safetensors");
  }

  // The calls of one epoch's save (its two files): call per_save + 1 is epoch2's first.
  static long per_save(const std::string& op) { return counts_[op] / 2; }

  static inline std::string root_, reference_dir_;
  static inline std::map<std::string, long> counts_;
};

TEST_F(CnnTrainIoError, TheUninterruptedRunIsCounted) {
  // Two saves of the same tensors, each two files: each call kind an even count, one of each at least.
  for (const char* op : {"write", "fsync", "close", "rename"}) {
    EXPECT_GT(counts_[op], 0) << op;
    EXPECT_EQ(counts_[op] % 2, 0) << op;
  }
}

TEST_F(CnnTrainIoError, AFailedWriteNamesTheFileAndKeepsThePreviousCheckpoint) {
  expect_survived_at_second_save("write", {".safetensors", "write", per_save("write") + 1},
                                 "io_error_write_" + std::to_string(::getpid()) + "/epoch2.safetensors.tmp-");
}

TEST_F(CnnTrainIoError, AFailedFsyncNamesTheFile) {
  expect_survived_at_second_save("fsync", {".safetensors", "fsync", per_save("fsync") + 1}, "cannot flush '");
}

TEST_F(CnnTrainIoError, AFailedCloseIsNotTakenForASave) {
  // close reports write-back failures on some file systems: the file must not be renamed into place.
  expect_survived_at_second_save("close", {".safetensors", "close", per_save("close") + 1}, "cannot close '");
}

TEST_F(CnnTrainIoError, AFailedRenameNamesBothFiles) {
  expect_survived_at_second_save("rename", {".safetensors", "rename", per_save("rename") + 1},
                                 "/epoch2.safetensors.tmp-");
}

TEST_F(CnnTrainIoError, AFailedFolderFlushIsReported) {
  // Calls on every path in the folder count: per file saved (epoch1, last, epoch2, ...), its fsync then the
  // folder's; the 6th is the folder's after epoch2.
  const std::string dir = testing::temp_dir("io_error_folder");
  const testing::RunResult r = run_with_fault(run_args(root_, dir), {dir, "fsync", 6});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot flush folder '" + dir + "' after writing '" + dir + "/epoch2.safetensors'"),
            std::string::npos)
      << r.output;
  const testing::RunResult resumed = run_train(with_args(run_args(root_, dir), {"--resume", "auto"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  expect_same_data(reference_dir_ + "/epoch2.safetensors", dir + "/epoch2.safetensors");
}

TEST_F(CnnTrainIoError, AFailedCheckpointReadIsNotTakenForATruncatedFile) {
  const std::string file = reference_dir_ + "/epoch1.safetensors";
  const testing::RunResult r =
      run_with_fault(with_args(run_args(root_, testing::temp_dir("io_error_read_ckpt")), {"--resume", file}),
                     {".safetensors", "read", 1});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot read checkpoint '" + file + "' after 0 bytes: Input/output error"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("truncated"), std::string::npos) << r.output;
}

TEST_F(CnnTrainIoError, AFailedDataReadNamesTheFile) {
  const testing::RunResult r = run_with_fault(run_args(root_, testing::temp_dir("io_error_read_data")),
                                              {root_ + "/train/", "read", 1});
  EXPECT_EQ(r.exit_code, 2) << r.output;  // input checked before the first step: cnn_train's exit 2
  EXPECT_NE(r.output.find(root_ + "/train/"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("read failed after 0 bytes: Input/output error"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine::apps
