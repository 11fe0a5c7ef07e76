// Bad checkpoints (../shared/BAD_INPUTS.md, "Checkpoints"): each is an engine::Error naming the file and,
// where one is at fault, the tensor; the model is left untouched.

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "optim/checkpoint.h"
#include "tests/cpu/checkpoint_test_util.h"

namespace engine::optim {
namespace {

using testing::fresh_dir;
using testing::host_bytes_of;
using testing::trained_model;

// Expects load_checkpoint(path) into a fresh small net to throw with every needle in the message, and the
// model's parameters to be unchanged.
void expect_load_error(const std::string& path, std::initializer_list<std::string> needles) {
  auto m = trained_model(8, 0);
  const auto before = host_bytes_of(m.model->flat_parameters());
  try {
    load_checkpoint(path, *m.model, m.sgd.get());
    ADD_FAILURE() << "loading " << path << " did not fail";
  } catch (const Error& e) {
    for (const std::string& needle : needles) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "'" << needle << "' not in: " << e.what();
    }
  }
  EXPECT_EQ(host_bytes_of(m.model->flat_parameters()), before) << "a failed load changed the model";
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file with `header` as its JSON header (8-byte length in front) and `data_bytes` zero bytes after it.
std::string raw_file(const std::string& header, std::size_t data_bytes, std::uint64_t claimed_length = 0) {
  const std::uint64_t n = claimed_length ? claimed_length : header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + std::string(data_bytes, '\0');
}

// A valid checkpoint of the small net.
std::string saved(const std::string& dir) {
  auto a = trained_model(3, 1);
  std::string path = dir + "/good.safetensors";
  save_checkpoint(path, *a.model, a.sgd.get(), {});
  return path;
}

TEST(CheckpointBadInput, MissingFile) {
  expect_load_error("/nonexistent/ckpt.safetensors", {"/nonexistent/ckpt.safetensors", "does not exist"});
}

TEST(CheckpointBadInput, TruncatedAnywhere) {
  const std::string dir = fresh_dir("bad_trunc");
  const std::string good = saved(dir);
  const auto size = std::filesystem::file_size(good);
  for (const std::uintmax_t keep :
       {std::uintmax_t{0}, std::uintmax_t{5}, std::uintmax_t{40}, size / 2, size - 1}) {
    const std::string path = dir + "/cut" + std::to_string(keep) + ".safetensors";
    std::filesystem::copy_file(good, path);
    std::filesystem::resize_file(path, keep);
    expect_load_error(path, {path});
  }
  const std::string path = dir + "/last_byte.safetensors";
  std::filesystem::copy_file(good, path);
  std::filesystem::resize_file(path, size - 1);
  expect_load_error(path, {"out of range", "optim.momentum_buffer"});  // the last tensor is named
}

TEST(CheckpointBadInput, CorruptHeaderLength) {
  const std::string dir = fresh_dir("bad_len");
  write_bytes(dir + "/huge.safetensors", raw_file("{}", 0, std::uint64_t{1} << 62));
  expect_load_error(dir + "/huge.safetensors", {"huge.safetensors", "header length"});
  write_bytes(dir + "/past.safetensors", raw_file("{}", 0, 4000));
  expect_load_error(dir + "/past.safetensors", {"past.safetensors", "4000"});
}

TEST(CheckpointBadInput, CorruptHeaderJson) {
  const std::string dir = fresh_dir("bad_json");
  write_bytes(dir + "/json.safetensors", raw_file("{\"0.weight\": {\"dtype\": \"F32\", ", 0));
  expect_load_error(dir + "/json.safetensors", {"json.safetensors", "not JSON"});
  write_bytes(dir + "/array.safetensors", raw_file("[1, 2]  ", 0));
  expect_load_error(dir + "/array.safetensors", {"not a JSON object"});
  write_bytes(dir + "/dtype.safetensors",
              raw_file(R"({"a": {"dtype": "F31", "shape": [1], "data_offsets": [0, 4]}})", 4));
  expect_load_error(dir + "/dtype.safetensors", {"'a'", "unknown dtype"});
}

TEST(CheckpointBadInput, OffsetsOutOfRangeOrOverlapping) {
  const std::string dir = fresh_dir("bad_offsets");
  write_bytes(dir + "/range.safetensors",
              raw_file(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8));
  expect_load_error(dir + "/range.safetensors", {"'a'", "out of range"});
  write_bytes(dir + "/overlap.safetensors",
              raw_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                       R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                       12));
  expect_load_error(dir + "/overlap.safetensors", {"'b'", "overlap"});
  write_bytes(dir + "/size.safetensors",
              raw_file(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8));
  expect_load_error(dir + "/size.safetensors", {"'a'", "needs 12 bytes"});
}

// The small net's state with one entry altered by `change`, written as a tool that rewrites a file would (or
// a version before checksums): without the crc32 it no longer matches, so the model's own checks answer.
std::string altered(const std::string& dir, const std::string& name,
                    const std::function<void(TensorRecord&, std::vector<std::uint8_t>&)>& change) {
  const SafetensorsFile good = SafetensorsFile::read(saved(dir));
  std::vector<TensorRecord> records;
  std::vector<std::vector<std::uint8_t>> keep;
  keep.reserve(good.entries().size());
  for (const auto& [n, e] : good.entries()) {
    const auto bytes = good.bytes(e);
    keep.emplace_back(bytes.begin(), bytes.end());
    records.push_back({n, e.dtype, e.shape, {}});
    if (n == name) change(records.back(), keep.back());
    records.back().bytes = keep.back();
  }
  std::string path = dir + "/altered.safetensors";
  auto metadata = good.metadata();
  metadata.erase(kChecksumKey);
  write_safetensors(path, records, metadata);
  return path;
}

TEST(CheckpointBadInput, WrongShape) {
  const std::string dir = fresh_dir("bad_shape");
  const std::string path = altered(dir, "0.weight", [](TensorRecord& r, std::vector<std::uint8_t>&) {
    r.shape = {4, 3, 9};  // same byte count, another shape
  });
  expect_load_error(path, {"'0.weight'", "[4, 3, 9]", "[4, 3, 3, 3]"});
}

TEST(CheckpointBadInput, WrongDtype) {
  const std::string dir = fresh_dir("bad_dtype");
  const std::string path =
      altered(dir, "1.running_var", [](TensorRecord& r, std::vector<std::uint8_t>& bytes) {
        r.dtype = "F64";
        bytes.resize(bytes.size() * 2);
      });
  expect_load_error(path, {"'1.running_var'", "F64", "F32"});
}

TEST(CheckpointBadInput, CheckpointOfAnotherModel) {
  const std::string dir = fresh_dir("bad_model");
  auto other = trained_model(3, 1, "other_net");
  save_checkpoint(dir + "/other.safetensors", *other.model, nullptr, {});
  expect_load_error(dir + "/other.safetensors", {"other.safetensors", "'other_net'", "'small_net'"});
  // Without metadata (a PyTorch file of another module), the tensor names give it away.
  write_bytes(dir + "/torch.safetensors",
              raw_file(R"({"conv1.weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4));
  expect_load_error(dir + "/torch.safetensors", {"torch.safetensors", "'0.weight'"});
}

}  // namespace
}  // namespace engine::optim
