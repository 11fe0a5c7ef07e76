#include "apps/tensorboard/event_writer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include <fmt/format.h>

#include "apps/tensorboard/crc32c.h"
#include "apps/tensorboard/event.pb.h"
#include "core/error.h"

namespace engine::tensorboard {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}

std::uint64_t get_le(const std::string& bytes, std::size_t at, int size) {
  std::uint64_t v = 0;
  for (int i = 0; i < size; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]))
         << (8 * i);
  return v;
}

Event event_at(std::int64_t step) {
  Event e;
  e.set_wall_time(now_seconds());
  e.set_step(step);
  return e;
}

}  // namespace

EventWriter::EventWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ENGINE_CHECK(!ec, "--tensorboard '{}': cannot create the folder: {}", dir, ec.message());
  // The time in the name orders a run's files; the pid keeps two writers of the same second apart.
  const auto seconds = static_cast<std::int64_t>(now_seconds());
  path_ = (std::filesystem::path(dir) /
           fmt::format("events.out.tfevents.{}.{}.{}", seconds, host_name(), ::getpid()))
              .string();
  for (int n = 1; std::filesystem::exists(path_); ++n)  // a second writer in this process and second
    path_ = (std::filesystem::path(dir) /
             fmt::format("events.out.tfevents.{}.{}.{}.{}", seconds, host_name(), ::getpid(), n))
                .string();
  file_ = std::fopen(path_.c_str(), "wb");
  ENGINE_CHECK(file_ != nullptr, "--tensorboard: cannot create {}: {}", path_, std::strerror(errno));
  Event e = event_at(0);
  e.set_file_version("brain.Event:2");
  write_record(e.SerializeAsString());
  flush();
}

EventWriter::~EventWriter() {
  if (file_ != nullptr) std::fclose(file_);  // a failure here has no one left to tell
}

void EventWriter::write_record(const std::string& bytes) {
  std::string header;
  put_u64(header, bytes.size());
  put_u32(header, mask_crc(crc32c(header.data(), 8)));
  std::string footer;
  put_u32(footer, mask_crc(crc32c(bytes.data(), bytes.size())));
  const bool ok = std::fwrite(header.data(), 1, header.size(), file_) == header.size() &&
                  std::fwrite(bytes.data(), 1, bytes.size(), file_) == bytes.size() &&
                  std::fwrite(footer.data(), 1, footer.size(), file_) == footer.size();
  ENGINE_CHECK(ok, "--tensorboard: cannot write to {}: {}", path_, std::strerror(errno));
}

void EventWriter::flush() {
  ENGINE_CHECK(std::fflush(file_) == 0, "--tensorboard: cannot write to {}: {}", path_, std::strerror(errno));
}

void EventWriter::start_at(std::int64_t step) {
  Event e = event_at(step);
  e.mutable_session_log()->set_status(SessionLog::START);
  write_record(e.SerializeAsString());
}

void EventWriter::scalar(const std::string& tag, double value, std::int64_t step) {
  Event e = event_at(step);
  Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  write_record(e.SerializeAsString());
}

void EventWriter::image(const std::string& tag, const data::Image& image, std::int64_t step) {
  const std::vector<std::uint8_t> png = data::encode_png(image);
  Event e = event_at(step);
  Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  Summary::Image* out = v->mutable_image();
  out->set_height(static_cast<std::int32_t>(image.height));
  out->set_width(static_cast<std::int32_t>(image.width));
  out->set_colorspace(static_cast<std::int32_t>(image.channels));
  out->set_encoded_image_string(std::string(png.begin(), png.end()));
  write_record(e.SerializeAsString());
}

void EventWriter::histogram(const std::string& tag, std::span<const float> values, std::int64_t step,
                            int buckets) {
  ENGINE_CHECK(buckets > 0, "histogram '{}': {} buckets", tag, buckets);
  Event e = event_at(step);
  Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  HistogramProto* h = v->mutable_histo();
  double lo = 0.0, hi = 0.0, sum = 0.0, squares = 0.0;
  if (!values.empty()) {
    const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
    lo = static_cast<double>(*mn);
    hi = static_cast<double>(*mx);
  }
  for (const float f : values) {
    const auto x = static_cast<double>(f);
    sum += x;
    squares += x * x;
  }
  h->set_min(lo);
  h->set_max(hi);
  h->set_num(static_cast<double>(values.size()));
  h->set_sum(sum);
  h->set_sum_squares(squares);
  // All values equal (or none): one bucket ending at the value holds them all.
  const int n = hi > lo ? buckets : 1;
  const double width = (hi - lo) / n;
  std::vector<double> counts(static_cast<std::size_t>(n), 0.0);
  for (const float f : values) {
    const auto x = static_cast<double>(f);
    const int b = width > 0 ? std::min(n - 1, static_cast<int>((x - lo) / width)) : 0;
    counts[static_cast<std::size_t>(b)] += 1.0;
  }
  for (int b = 0; b < n; ++b) {
    h->add_bucket_limit(b + 1 == n ? hi : lo + width * (b + 1));
    h->add_bucket(counts[static_cast<std::size_t>(b)]);
  }
  write_record(e.SerializeAsString());
}

std::vector<std::string> read_event_records(const std::string& path) {
  std::string bytes;
  {
    std::FILE* in = std::fopen(path.c_str(), "rb");
    ENGINE_CHECK(in != nullptr, "{}: cannot open: {}", path, std::strerror(errno));
    char buffer[1 << 16];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, in)) > 0;) bytes.append(buffer, n);
    const bool failed = std::ferror(in) != 0;
    std::fclose(in);
    ENGINE_CHECK(!failed, "{}: cannot read", path);
  }
  std::vector<std::string> records;
  for (std::size_t at = 0; at < bytes.size();) {
    ENGINE_CHECK(bytes.size() - at >= 12, "{}: truncated record header at byte {}", path, at);
    const std::uint64_t length = get_le(bytes, at, 8);
    ENGINE_CHECK(mask_crc(crc32c(bytes.data() + at, 8)) == get_le(bytes, at + 8, 4),
                 "{}: the length CRC of the record at byte {} does not match", path, at);
    ENGINE_CHECK(length <= bytes.size() - at - 12 && bytes.size() - at - 12 - length >= 4,
                 "{}: the record at byte {} is truncated ({} bytes announced)", path, at, length);
    const std::string data = bytes.substr(at + 12, length);
    ENGINE_CHECK(mask_crc(crc32c(data.data(), data.size())) == get_le(bytes, at + 12 + length, 4),
                 "{}: the data CRC of the record at byte {} does not match", path, at);
    records.push_back(data);
    at += 12 + length + 4;
  }
  return records;
}

}  // namespace engine::tensorboard
