#pragma once
// TensorBoard event files (what `tensorboard --logdir DIR` reads): TFRecord framing (a little-endian uint64
// length, its masked CRC-32C, the bytes, their masked CRC-32C) around protobuf Event messages
// (apps/tensorboard/event.proto). One writer is one file, events.out.tfevents.<time>.<host>.<pid>; a run that
// is resumed writes a new file into the same folder, opened with start_at(step) so TensorBoard drops what the
// interrupted run logged after that step and the curves continue without a repeated step.

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "data/image_codec.h"

namespace engine::tensorboard {

class EventWriter {
 public:
  // Creates `dir` if needed and a new event file in it, whose first record is the file version. Throws
  // engine::Error naming the folder or file when either cannot be made.
  explicit EventWriter(const std::string& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  const std::string& path() const { return path_; }

  // SessionLog START at `step`: the events with larger steps in this run's earlier files are dropped.
  void start_at(std::int64_t step);
  void scalar(const std::string& tag, double value, std::int64_t step);
  // The image as PNG (1, 3 or 4 channels, 8 bits).
  void image(const std::string& tag, const data::Image& image, std::int64_t step);
  // min, max, count, sum, sum of squares and `buckets` equal-width buckets over [min, max].
  void histogram(const std::string& tag, std::span<const float> values, std::int64_t step, int buckets = 30);
  // Events reach the disk at flush() and when the writer is destroyed (TensorBoard polls the file).
  void flush();

 private:
  void write_record(const std::string& bytes);

  std::string path_;
  std::FILE* file_ = nullptr;
};

// The payloads of every record in `path`, in order, each checked against its length and data CRCs. Throws
// engine::Error naming the file and the record's offset for a truncated or corrupt record.
std::vector<std::string> read_event_records(const std::string& path);

}  // namespace engine::tensorboard
