// TensorBoard event files (apps/tensorboard/): CRC-32C against RFC 3720's vectors, the records read back and
// parsed as the Events written, corruption and truncation refused by offset, and TensorBoard's own reader
// (PyPI tensorboard, skipped without it) seeing the scalars, image, histogram and a resumed run's purge.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/common/environment.h"
#include "tests/common/error_of.h"
#include "tests/common/pytorch_tools.h"
#include "tests/common/scratch_dirs.h"

#if ENGINE_HAVE_TENSORBOARD
#include "apps/tensorboard/crc32c.h"
#include "apps/tensorboard/event.pb.h"
#include "apps/tensorboard/event_writer.h"

namespace engine::tensorboard {
namespace {

std::string only_file(const std::filesystem::path& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().string());
  return files.size() == 1 ? files[0] : "";
}

std::vector<Event> read_events(const std::string& path) {
  std::vector<Event> events;
  for (const std::string& r : read_event_records(path)) {
    Event e;
    EXPECT_TRUE(e.ParseFromString(r)) << path;
    events.push_back(e);
  }
  return events;
}

data::Image gradient_image(int channels, int height, int width) {
  data::Image image{channels, height, width, {}};
  for (int i = 0; i < channels * height * width; ++i)
    image.pixels.push_back(static_cast<std::uint8_t>(i * 7));
  return image;
}

TEST(Crc32c, MatchesRfc3720Vectors) {
  const std::string digits = "123456789";
  EXPECT_EQ(crc32c(digits.data(), digits.size()), 0xE3069283u);
  const std::vector<std::uint8_t> zeros(32, 0x00), ones(32, 0xFF);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::vector<std::uint8_t> ascending(32);
  for (int i = 0; i < 32; ++i) ascending[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
  // Continuing from a partial CRC equals one pass.
  EXPECT_EQ(crc32c(digits.data() + 4, 5, crc32c(digits.data(), 4)), 0xE3069283u);
}

TEST(TensorboardEventWriter, RecordsParseBackAsTheEventsWritten) {
  const auto dir = testing::scratch_path("tb_", "records");
  std::string path;
  {
    EventWriter writer(dir.string());
    path = writer.path();
    EXPECT_NE(path.find("events.out.tfevents."), std::string::npos) << path;
    writer.scalar("train/loss", 1.25, 3);
    writer.image("train/samples", gradient_image(3, 5, 7), 0);
    const std::vector<float> values = {-1.0f, 0.5f, 0.5f, 2.0f, 3.0f};
    writer.histogram("weights/conv1", values, 4, 5);
    writer.start_at(9);
  }
  ASSERT_EQ(only_file(dir), path);
  const std::vector<Event> events = read_events(path);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");  // TensorBoard purges by SessionLog from version 2
  EXPECT_GT(events[0].wall_time(), 1.6e9);
  EXPECT_EQ(events[1].step(), 3);
  ASSERT_EQ(events[1].summary().value_size(), 1);
  EXPECT_EQ(events[1].summary().value(0).tag(), "train/loss");
  EXPECT_EQ(events[1].summary().value(0).simple_value(), 1.25f);
  const Summary::Image& image = events[2].summary().value(0).image();
  EXPECT_EQ(image.height(), 5);
  EXPECT_EQ(image.width(), 7);
  EXPECT_EQ(image.colorspace(), 3);
  const std::string& png = image.encoded_image_string();
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  const HistogramProto& h = events[3].summary().value(0).histo();
  EXPECT_EQ(h.min(), -1.0);
  EXPECT_EQ(h.max(), 3.0);
  EXPECT_EQ(h.num(), 5.0);
  EXPECT_EQ(h.sum(), 5.0);
  EXPECT_EQ(h.sum_squares(), 1.0 + 0.25 + 0.25 + 4.0 + 9.0);
  // Five buckets of width 0.8 over [-1, 3]: -1 | 0.5 0.5 | . | 2 | 3 (the maximum falls in the last).
  ASSERT_EQ(h.bucket_size(), 5);
  const std::vector<double> counts = {1, 2, 0, 1, 1}, limits = {-0.2, 0.6, 1.4, 2.2, 3.0};
  for (int b = 0; b < 5; ++b) {
    EXPECT_EQ(h.bucket(b), counts[static_cast<std::size_t>(b)]) << b;
    EXPECT_NEAR(h.bucket_limit(b), limits[static_cast<std::size_t>(b)], 1e-12) << b;
  }
  EXPECT_EQ(events[4].step(), 9);
  EXPECT_EQ(events[4].session_log().status(), SessionLog::START);
}

TEST(TensorboardEventWriter, AFlippedByteOrATruncatedRecordIsRefusedByOffset) {
  const auto dir = testing::scratch_path("tb_", "corrupt");
  std::string path;
  {
    EventWriter writer(dir.string());
    path = writer.path();
    writer.scalar("a", 1.0, 1);
  }
  std::ostringstream read;
  read << std::ifstream(path, std::ios::binary).rdbuf();
  const std::string bytes = read.str();
  const std::size_t second = 12 + read_event_records(path)[0].size() + 4;  // the scalar's record
  std::string flipped = bytes;
  flipped[second + 14] = static_cast<char>(flipped[second + 14] ^ 0x10);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << flipped;
  EXPECT_NE(testing::error_of([&] {
              read_event_records(path);
            }).find(": the data CRC of the record at byte " + std::to_string(second)),
            std::string::npos);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 3);
  EXPECT_NE(testing::error_of([&] { read_event_records(path); }).find("is truncated"), std::string::npos);
}

TEST(TensorboardEventWriter, AFolderThatCannotBeMadeIsNamed) {
  const auto file = testing::scratch_dir("tb_", "blocked") / "a_file";
  std::ofstream(file) << "x";
  const std::string message = testing::error_of([&] { EventWriter writer((file / "run").string()); });
  EXPECT_NE(message.find("--tensorboard '" + (file / "run").string() + "': cannot create the folder"),
            std::string::npos)
      << message;
}

// TensorBoard's reader: what it shows, and a resumed run's second file dropping the steps the first logged
// after the checkpoint (steps 1-6 logged, the run resumed from step 4: 5 and 6 come from the second file).
TEST(TensorboardEventWriter, TensorBoardsOwnReaderSeesTheRunAndTheResumedSteps) {
  SKIP_WITHOUT_PYTHON_MODULES("tensorboard.backend.event_processing.event_accumulator");
  const auto dir = testing::scratch_path("tb_", "reader");
  {
    EventWriter first(dir.string());
    for (int step = 1; step <= 6; ++step) first.scalar("train/loss", step, step);
    first.image("train/samples", gradient_image(3, 4, 6), 0);
    const std::vector<float> values = {0.0f, 1.0f, 2.0f, 3.0f};
    first.histogram("weights/fc", values, 2, 3);
  }
  {
    EventWriter resumed(dir.string());
    resumed.start_at(5);
    for (int step = 5; step <= 7; ++step) resumed.scalar("train/loss", 10.0 * step, step);
  }
  const std::string script = engine::testing::repo_root().string() + "/tests/python/read_tensorboard.py";
  const std::string out =
      testing::command_output(testing::pytorch_python() + " " + script + " " + dir.string());
  ASSERT_FALSE(out.empty()) << "the reader failed on " << dir;
  const nlohmann::json run = nlohmann::json::parse(out);
  const nlohmann::json expected = {{1, 1.0}, {2, 2.0}, {3, 3.0}, {4, 4.0}, {5, 50.0}, {6, 60.0}, {7, 70.0}};
  EXPECT_EQ(run["scalars"]["train/loss"], expected) << out;
  EXPECT_EQ(run["images"]["train/samples"][0][1], 6) << out;
  EXPECT_EQ(run["images"]["train/samples"][0][2], 4) << out;
  const nlohmann::json histogram = {{2, 4.0, 0.0, 3.0, 6.0, 3}};  // step, count, min, max, sum, buckets
  EXPECT_EQ(run["histograms"]["weights/fc"], histogram) << out;
}

}  // namespace
}  // namespace engine::tensorboard

#else

TEST(TensorboardEventWriter, SkippedWithoutProtobuf) {
  GTEST_SKIP() << "built without libprotobuf-dev/protobuf-compiler: no TensorBoard event files";
}

#endif
