// Checkpoints (optim/checkpoint.h): a save/load round trip restores every tensor, counter, momentum buffer
// and training-state field bit for bit; a file with PyTorch's names and no metadata (what
// safetensors.torch.save_file(model.state_dict()) writes) loads; a process killed in the middle of a save
// leaves the previous checkpoint loadable; the files follow the safetensors layout byte for byte.

#include "optim/checkpoint.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cpu/checkpoint_test_util.h"

namespace engine::optim {
namespace {

using testing::fresh_dir;
using testing::host_bytes_of;
using testing::trained_model;

TEST(Checkpoint, RoundTripRestoresEverythingBitwise) {
  const std::string dir = fresh_dir("roundtrip");
  auto a = trained_model(/*seed=*/3, /*steps=*/3);
  TrainingState state{.epoch = 4,
                      .step = 123,
                      .seed = 99,
                      .dropout_offset = 17,
                      .sampler_seed = 99,
                      .sampler_epoch = 4,
                      .extra = {{"dataset", "mnist"}}};
  save_checkpoint(dir + "/a.safetensors", *a.model, a.sgd.get(), state);

  auto b = trained_model(/*seed=*/8, /*steps=*/0);  // other weights, no momentum state
  const LoadedCheckpoint loaded = load_checkpoint(dir + "/a.safetensors", *b.model, b.sgd.get());
  EXPECT_TRUE(loaded.has_training_state);
  EXPECT_TRUE(loaded.restored_momentum);
  EXPECT_EQ(host_bytes_of(b.model->flat_parameters()), host_bytes_of(a.model->flat_parameters()));
  EXPECT_EQ(host_bytes_of(b.model->flat_buffers()), host_bytes_of(a.model->flat_buffers()));
  EXPECT_EQ(host_bytes_of(b.sgd->momentum_buffer()), host_bytes_of(a.sgd->momentum_buffer()));
  ASSERT_EQ(b.model->counters().size(), a.model->counters().size());
  for (std::size_t i = 0; i < a.model->counters().size(); ++i) {
    EXPECT_EQ(*b.model->counters()[i].value, *a.model->counters()[i].value);
    EXPECT_GT(*b.model->counters()[i].value, 0);
  }
  EXPECT_TRUE(b.sgd->has_momentum_state());
  EXPECT_EQ(b.sgd->steps(), 123);
  EXPECT_EQ(loaded.state.epoch, 4);
  EXPECT_EQ(loaded.state.step, 123);
  EXPECT_EQ(loaded.state.seed, 99u);
  EXPECT_EQ(loaded.state.dropout_offset, 17u);
  EXPECT_EQ(loaded.state.sampler_epoch, 4u);
  EXPECT_EQ(loaded.state.extra.at("dataset"), "mnist");
}

TEST(Checkpoint, FileFollowsTheSafetensorsLayout) {
  const std::string dir = fresh_dir("layout");
  auto a = trained_model(3, 1);
  save_checkpoint(dir + "/a.safetensors", *a.model, a.sgd.get(), {});
  std::ifstream in(dir + "/a.safetensors", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data block starts 8-byte aligned";
  const std::string header(bytes.data() + 8, n);
  const auto json = nlohmann::json::parse(header);
  // PyTorch's names, dtypes and shapes; num_batches_tracked as a 0-dim int64.
  EXPECT_EQ(json["0.weight"]["dtype"], "F32");
  EXPECT_EQ(json["0.weight"]["shape"], nlohmann::json({4, 3, 3, 3}));
  EXPECT_EQ(json["1.num_batches_tracked"]["dtype"], "I64");
  EXPECT_EQ(json["1.num_batches_tracked"]["shape"], nlohmann::json::array());
  EXPECT_EQ(json["optim.momentum_buffer.0.weight"]["shape"], nlohmann::json({4, 3, 3, 3}));
  EXPECT_EQ(json["__metadata__"]["format"], kCheckpointFormat);
  EXPECT_EQ(json["__metadata__"]["model"], "small_net");
  // The first tensor's bytes are the model's first parameter.
  const auto begin = json["0.weight"]["data_offsets"][0].get<std::size_t>();
  const float* stored = reinterpret_cast<const float*>(bytes.data() + 8 + n + begin);
  // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): the bits are what must be equal (NaN, -0)
  EXPECT_EQ(std::memcmp(stored, a.model->parameters()[0].value.data<float>(), 4 * 108), 0);
}

TEST(Checkpoint, LoadsBareWeightsAsPyTorchWritesThem) {
  const std::string dir = fresh_dir("bare");
  auto a = trained_model(3, 2);
  // Only the state dict, no metadata, no optimizer: safetensors.torch.save_file(model.state_dict(), path).
  std::vector<TensorRecord> records;
  std::vector<std::vector<std::uint8_t>> keep;
  for (const auto& e : a.model->state_dict()) {
    if (e.kind == layers::StateEntry::Kind::Counter) {
      keep.emplace_back(8);
      std::memcpy(keep.back().data(), a.model->counters()[e.index].value, 8);
      records.push_back({e.name, "I64", {}, keep.back()});
    } else {
      const Tensor& t = e.kind == layers::StateEntry::Kind::Parameter ? a.model->parameters()[e.index].value
                                                                      : a.model->buffers()[e.index].value;
      keep.push_back(host_bytes_of(t));
      records.push_back({e.name, "F32", t.shape(), keep.back()});
    }
  }
  write_safetensors(dir + "/torch.safetensors", records, {});
  auto b = trained_model(8, 0);
  const LoadedCheckpoint loaded = load_checkpoint(dir + "/torch.safetensors", *b.model, b.sgd.get());
  EXPECT_FALSE(loaded.has_training_state);
  EXPECT_FALSE(loaded.restored_momentum);
  EXPECT_EQ(host_bytes_of(b.model->flat_parameters()), host_bytes_of(a.model->flat_parameters()));
}

TEST(Checkpoint, KillDuringSaveLeavesThePreviousCheckpointLoadable) {
  const std::string dir = fresh_dir("kill");
  const std::string path = dir + "/last.safetensors";
  auto a = trained_model(3, 1);
  save_checkpoint(path, *a.model, a.sgd.get(), {.epoch = 1});
  const auto before = host_bytes_of(a.model->flat_parameters());
  auto next = trained_model(5, 2);  // different weights, saved over the same path by a process that dies

  std::fflush(nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    WriteOptions die;
    die.after_chunk = [](std::size_t written) {
      if (written > 16) ::raise(SIGKILL);  // after the header length and part of the header
    };
    save_checkpoint(path, *next.model, next.sgd.get(), {.epoch = 2}, die);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child was meant to die mid-save";

  auto b = trained_model(8, 0);
  const LoadedCheckpoint loaded = load_checkpoint(path, *b.model, b.sgd.get());
  EXPECT_EQ(loaded.state.epoch, 1);
  EXPECT_EQ(host_bytes_of(b.model->flat_parameters()), before);
  // The dead save's partial temporary file is beside it, never at `path`.
  bool partial_found = false;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    partial_found |= f.path().filename().string().rfind("last.safetensors.tmp-", 0) == 0;
  }
  EXPECT_TRUE(partial_found);
}

}  // namespace
}  // namespace engine::optim
