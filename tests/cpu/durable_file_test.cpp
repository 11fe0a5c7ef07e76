// write_file_durably (core/durable_file.h): the bytes arrive whole, and every failure (a folder that does not
// exist, a write that dies halfway, a rename onto a folder) names what was written and the file, keeps the
// old file as it was and leaves no temporary behind. The checkpoint, the ONNX export and --trace write
// through it; tests/cpu/cnn_train_io_error_test.cpp injects the system calls' failures into the checkpoint's.

#include "core/durable_file.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "layers/models.h"
#include "layers/onnx/onnx_model.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s(static_cast<std::size_t>(fs::file_size(path)), '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  return s;
}

std::span<const std::uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// The names in `dir` other than `keep`: a temporary left behind shows up here.
std::vector<std::string> others_in(const fs::path& dir, const std::string& keep) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename() != keep) names.push_back(e.path().filename().string());
  }
  return names;
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(DurableFile, PiecesArriveWholeAndReplaceTheOldFile) {
  const fs::path dir = testing::scratch_dir("durable_", "whole");
  const std::string path = (dir / "out.bin").string();
  std::ofstream(path) << "old contents";
  const std::string a = "header|", b(5 << 20, 'x'), c = "|tail";  // b spans two 4 MiB chunks
  const std::span<const std::uint8_t> pieces[] = {bytes_of(a), bytes_of(b), bytes_of(c)};
  std::vector<std::size_t> progress;
  write_file_durably("test file", path, pieces,
                     {.after_chunk = [&](std::size_t n) { progress.push_back(n); }});
  EXPECT_EQ(read_all(path), a + b + c);
  EXPECT_TRUE(others_in(dir, "out.bin").empty());
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), a.size() + b.size() + c.size());
}

TEST(DurableFile, AFolderThatDoesNotExistIsNamedWithTheSystemsReason) {
  const fs::path dir = testing::scratch_dir("durable_", "nofolder");
  const std::string path = (dir / "missing" / "out.bin").string();
  const std::string s = "data";
  const std::span<const std::uint8_t> piece = bytes_of(s);
  const std::string message = error_of([&] { write_file_durably("test file", path, {&piece, 1}); });
  EXPECT_NE(message.find("test file: cannot write '" + path + ".tmp-"), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

TEST(DurableFile, AWriteThatDiesHalfwayKeepsTheOldFileAndLeavesNoTemporary) {
  const fs::path dir = testing::scratch_dir("durable_", "halfway");
  const std::string path = (dir / "out.bin").string();
  std::ofstream(path) << "old contents";
  const std::string big(9 << 20, 'y');
  const std::span<const std::uint8_t> piece = bytes_of(big);
  EXPECT_THROW(
      write_file_durably("test file", path, {&piece, 1},
                         {.after_chunk = [](std::size_t) { throw std::runtime_error("disk died"); }}),
      std::runtime_error);
  EXPECT_EQ(read_all(path), "old contents");
  EXPECT_TRUE(others_in(dir, "out.bin").empty());
}

TEST(DurableFile, ARenameOntoAFolderIsNamedAndLeavesNoTemporary) {
  const fs::path dir = testing::scratch_dir("durable_", "rename");
  const fs::path target = dir / "taken";
  fs::create_directories(target / "inside");  // a non-empty folder: rename(2) cannot replace it
  const std::string s = "data";
  const std::span<const std::uint8_t> piece = bytes_of(s);
  const std::string message = error_of([&] {
    write_file_durably("test file", target.string(), {&piece, 1});
  });
  EXPECT_NE(message.find("test file: cannot rename '" + target.string() + ".tmp-"), std::string::npos)
      << message;
  EXPECT_TRUE(others_in(dir, "taken").empty());
}

// The ONNX export writes through it: a failed export leaves nothing beside its target (it used to leave
// FILE.partial, the whole model, behind).
TEST(DurableFile, AFailedOnnxExportLeavesNoPartialFile) {
  SKIP_WITHOUT_ONNX();
  const fs::path dir = testing::scratch_dir("durable_", "onnx");
  const fs::path target = dir / "model.onnx";
  fs::create_directories(target / "inside");
  layers::Model model = layers::build_model("cnn3", 3, 10, 32, 32);
  model.finalize(layers::testing::cpu_context(), 1);
  const std::string message = error_of([&] { layers::onnx::export_model(model, target.string()); });
  EXPECT_NE(message.find("export to ONNX: cannot rename"), std::string::npos) << message;
  EXPECT_TRUE(others_in(dir, "model.onnx").empty());
}

}  // namespace
}  // namespace engine
