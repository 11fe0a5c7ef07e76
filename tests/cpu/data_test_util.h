#pragma once
// Helpers for the dataset reader tests: a temporary folder, writing bytes, and a check that a statement
// throws engine::Error whose message contains given text (a file name, what is wrong).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace engine::data::testing {

// A fresh folder under the system temp dir, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "engine-data-XXXXXX").string();
    char* made = ::mkdtemp(pattern.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size()) << path;
  }
  ASSERT_EQ(std::fclose(f), 0) << path;
}

inline void write_text(const std::string& path, const std::string& text) {
  write_bytes(path, std::vector<std::uint8_t>(text.begin(), text.end()));
}

// The message of the engine::Error that `fn` throws, or a test failure.
template <typename Fn>
std::string error_message(Fn&& fn) {
  try {
    fn();
  } catch (const engine::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-engine exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

}  // namespace engine::data::testing

// EXPECT_DATA_ERROR(statement, "text", "more text"...): statement throws engine::Error mentioning every text.
#define EXPECT_DATA_ERROR(statement, ...)                                                               \
  do {                                                                                                  \
    const std::string engine_msg_ = ::engine::data::testing::error_message([&] { (void)(statement); }); \
    for (const std::string& engine_part_ : std::initializer_list<std::string>{__VA_ARGS__}) {           \
      EXPECT_NE(engine_msg_.find(engine_part_), std::string::npos)                                      \
          << "message \"" << engine_msg_ << "\" lacks \"" << engine_part_ << "\"";                      \
    }                                                                                                   \
  } while (0)
