// The checksum in a checkpoint's metadata (crc32, optim/checkpoint.h): a byte changed anywhere in the
// tensors is seen and the file refused by name, never loaded; --resume auto's search skips such a file and
// takes the one before; a file written before checksums still loads, reported as unchecked.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/train/resume_auto.h"
#include "optim/checkpoint.h"
#include "tests/cpu/checkpoint_test_util.h"

namespace engine::optim {
namespace {

using testing::fresh_dir;
using testing::host_bytes_of;
using testing::trained_model;

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The checkpoint of the small net after `steps` steps, at `epoch` epochs done.
std::string save_one(const std::string& path, int steps, std::int64_t epoch) {
  auto a = trained_model(5, steps);
  TrainingState state;
  state.epoch = epoch;
  save_checkpoint(path, *a.model, a.sgd.get(), state);
  return path;
}

TEST(CheckpointChecksum, AFlippedTensorByteAnywhereIsRefusedByName) {
  const std::string dir = fresh_dir("crc_flip");
  const std::string good = save_one(dir + "/good.safetensors", 2, 1);
  const auto file = SafetensorsFile::read(good);
  ASSERT_EQ(file.metadata().count(kChecksumKey), 1u);
  EXPECT_TRUE(verify_checkpoint_checksum(file));
  const std::vector<char> bytes = read_all(good);
  const std::size_t data_start = bytes.size() - file.data().size();
  const std::string epoch_field = R"("epoch":"1")";
  const auto field = std::search(bytes.begin(), bytes.end(), epoch_field.begin(), epoch_field.end());
  ASSERT_NE(field, bytes.end()) << "no epoch in the header";
  const auto epoch_digit = static_cast<std::size_t>(field - bytes.begin()) + epoch_field.size() - 2;
  // A header value ("epoch" 1 -> 3: a resume from the wrong place), the first and last data bytes and a
  // spread between: one bit each, the rest of the file as written.
  for (const std::size_t at : {epoch_digit, data_start, data_start + 1 + file.data().size() / 3,
                               data_start + file.data().size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(at);
    std::vector<char> flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x02);
    const std::string bad = dir + "/flipped.safetensors";
    write_all(bad, flipped);
    auto m = trained_model(8, 0);
    const auto before = host_bytes_of(m.model->flat_parameters());
    try {
      load_checkpoint(bad, *m.model, m.sgd.get());
      ADD_FAILURE() << "a checkpoint with a flipped byte at " << at << " loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad + "' is corrupt: its CRC-32"), std::string::npos) << e.what();
    }
    EXPECT_EQ(host_bytes_of(m.model->flat_parameters()), before) << "a refused file changed the model";
  }
}

TEST(CheckpointChecksum, ACheckpointWithoutTheChecksumStillLoadsUnchecked) {
  const std::string dir = fresh_dir("crc_old");
  const std::string path = save_one(dir + "/new.safetensors", 3, 2);
  const auto file = SafetensorsFile::read(path);
  // The same file as a version without checksums wrote it: every tensor, the metadata less crc32.
  std::vector<TensorRecord> records;
  std::vector<std::pair<std::size_t, std::string>> order;
  for (const auto& [name, e] : file.entries()) order.emplace_back(e.begin, name);
  std::sort(order.begin(), order.end());
  for (const auto& [begin, name] : order) {
    const auto& e = *file.find(name);
    records.push_back({name, e.dtype, e.shape, file.bytes(e)});
  }
  auto metadata = file.metadata();
  metadata.erase(kChecksumKey);
  const std::string old = dir + "/old.safetensors";
  write_safetensors(old, records, metadata);

  auto fresh = trained_model(8, 0), reference = trained_model(8, 0);
  const LoadedCheckpoint loaded = load_checkpoint(old, *fresh.model, fresh.sgd.get());
  EXPECT_FALSE(loaded.checksum_verified);
  EXPECT_TRUE(loaded.has_training_state);
  EXPECT_EQ(loaded.state.epoch, 2);
  EXPECT_EQ(loaded.state.extra.count(kChecksumKey), 0u);
  EXPECT_TRUE(load_checkpoint(path, *reference.model, reference.sgd.get()).checksum_verified);
  EXPECT_EQ(host_bytes_of(fresh.model->flat_parameters()), host_bytes_of(reference.model->flat_parameters()));
}

TEST(CheckpointChecksum, ResumeAutoSkipsACorruptNewestAndTakesTheOneBefore) {
  const std::string dir = fresh_dir("crc_auto");
  save_one(dir + "/epoch1.safetensors", 1, 1);
  const std::string newest = save_one(dir + "/epoch2.safetensors", 2, 2);
  ASSERT_EQ(apps::newest_checkpoint(dir)->path, newest);
  std::vector<char> bytes = read_all(newest);
  bytes[bytes.size() - 5] = static_cast<char>(bytes[bytes.size() - 5] ^ 0x01);
  write_all(newest, bytes);
  std::vector<std::string> notes;
  const auto found = apps::newest_checkpoint(dir, &notes);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->path, dir + "/epoch1.safetensors");
  EXPECT_EQ(found->epoch, 1);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("skipping " + newest + ": checkpoint '" + newest + "' is corrupt"),
            std::string::npos)
      << notes[0];
}

}  // namespace
}  // namespace engine::optim
