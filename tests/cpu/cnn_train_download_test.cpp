// cnn_train --download (apps/train/data_download.h, data/download.h): the C++ table of files agrees with
// scripts/download-data.sh; an unreachable source fails fast with exit 2, naming the URL and the file, and
// leaves no partial file; two CPU ranks download MNIST from a local file:// mirror (ENGINE_DATA_MIRROR) once
// and train on it (skipped where the MNIST files are not on this machine); the datasets that cannot be
// downloaded are refused naming the flag. The tests that run curl skip, saying so, where it is absent.

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "data/download.h"
#include "tests/common/environment.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

namespace fs = std::filesystem;
using testing::run_train;

const fs::path kRepo = engine::testing::repo_root();

// Sets an environment variable for the scope of a test (the programs it runs inherit it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::vector<std::string> part_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().string().find(".part") != std::string::npos) out.push_back(e.path().string());
  }
  return out;
}

// (URL, file name, md5) triples.
using Entry = std::tuple<std::string, std::string, std::string>;

// The files scripts/download-data.sh fetches: `fetch URL DEST/.../FILE MD5` calls with literal URLs, and the
// MNIST loop's `name:md5` pairs put into its URL templates ("http://.../$name.gz").
bool is_md5(const std::string& s) {
  return s.size() == 32 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(c) && !std::isupper(c); });
}

// The script's words (split at blanks and ';'), with continued lines joined and quotes dropped (no
// std::regex: GCC 12's <regex> trips -Wmaybe-uninitialized in the sanitizer build).
std::vector<std::string> script_words(const std::string& script) {
  std::ifstream in(script);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::vector<std::string> words;
  std::string word;
  const std::string text = buffer.str();
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;  // a continued line
    } else if (std::isspace(static_cast<unsigned char>(c)) || c == ';') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else if (c != '"') {
      word.push_back(c);
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

std::set<Entry> script_entries(const std::string& script) {
  const std::vector<std::string> words = script_words(script);
  std::set<Entry> out;
  std::vector<std::pair<std::string, std::string>> pairs;  // the MNIST loop's name:md5 words
  std::vector<std::string> templates;                      // URL prefixes of "http.../$name.gz"
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    const std::size_t colon = w.find(':');
    if (colon != std::string::npos && is_md5(w.substr(colon + 1)) && w.find('/') == std::string::npos) {
      pairs.emplace_back(w.substr(0, colon), w.substr(colon + 1));
    }
    if (w != "fetch" || i + 1 >= words.size() || words[i + 1].rfind("http", 0) != 0) continue;
    const std::string& url = words[i + 1];
    if (const std::size_t at = url.find("$name.gz"); at != std::string::npos) {
      templates.push_back(url.substr(0, at));
    } else if (i + 3 < words.size() && is_md5(words[i + 3])) {
      out.insert({url, url.substr(url.rfind('/') + 1), words[i + 3]});
    }
  }
  for (const auto& [name, md5] : pairs) {
    for (const std::string& prefix : templates) out.insert({prefix + name + ".gz", name + ".gz", md5});
  }
  return out;
}

TEST(CnnTrainDownload, TableAgreesWithDownloadScript) {
  const std::string script = (kRepo / "scripts" / "download-data.sh").string();
  ASSERT_TRUE(fs::exists(script)) << script;
  const std::set<Entry> from_script = script_entries(script);
  std::set<Entry> from_table;
  for (const char* dataset : {"cifar10", "mnist"}) {
    for (const data::DownloadFile& f : data::dataset_files(dataset)) {
      for (const std::string& url : f.urls) from_table.insert({url, f.name, f.md5});
    }
  }
  EXPECT_EQ(from_script.size(), 9u) << "1 CIFAR-10 URL and 4 MNIST files x 2 URLs expected in " << script;
  EXPECT_EQ(from_table, from_script) << "data/download.cpp's table and " << script << " must list the same "
                                     << "URLs, files and md5s";
  EXPECT_EQ(data::dataset_files("mnist").size(), 4u);
  EXPECT_FALSE(data::dataset_downloadable("fashion-mnist"));
}

TEST(CnnTrainDownload, MirrorReplacesEachUrlsDirectory) {
  const data::DownloadFile& f = data::dataset_files("cifar10").front();
  {
    const ScopedEnv mirror("ENGINE_DATA_MIRROR", "file:///srv/mirror");
    EXPECT_EQ(data::download_urls(f), std::vector<std::string>{"file:///srv/mirror/cifar-10-binary.tar.gz"});
  }
  const ScopedEnv none("ENGINE_DATA_MIRROR", "");
  EXPECT_EQ(data::download_urls(f), f.urls);
}

TEST(CnnTrainDownload, UnreachableSourceFailsFastNamingUrlAndFile) {
  SKIP_WITHOUT_TOOL("curl");  // the downloader runs curl
  const std::string dir = testing::temp_dir("download_offline");
  for (const std::string& mirror :
       {std::string("http://127.0.0.1:1/"), "file://" + dir + "/no-such-mirror/"}) {
    const ScopedEnv env("ENGINE_DATA_MIRROR", mirror);
    const std::string data_dir = dir + "/mnist";
    const auto start = std::chrono::steady_clock::now();
    const testing::RunResult r = run_train({"--cpu", "--dataset", "mnist", "--data-dir", data_dir,
                                            "--download", "--epochs", "1", "--checkpoint-dir", ""});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_LT(seconds, 30.0) << r.output;
    EXPECT_NE(r.output.find(mirror + "train-images-idx3-ubyte.gz"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(data_dir + "/train-images-idx3-ubyte.gz"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("by other means"), std::string::npos) << r.output;
    EXPECT_EQ(part_files(dir), std::vector<std::string>{}) << r.output;
    EXPECT_FALSE(fs::exists(data_dir + "/train-images-idx3-ubyte.gz"));
    EXPECT_FALSE(fs::exists(data_dir)) << "the failed download left the folder it made";
  }
  fs::remove_all(dir);
}

// Two ranks, rank 0's download fails: rank 1, waiting at the barrier, loses its peer and exits with the
// peer-failure status 3; the launcher names rank 0 as the cause (status 2, bad input) and rank 1 after it,
// and exits with rank 0's status, although rank 1 may well be reaped first.
TEST(CnnTrainDownload, AFailedDownloadOnTwoRanksNamesTheDownloadingRank) {
  SKIP_WITHOUT_TOOL("curl");  // the downloader runs curl
  const std::string dir = testing::temp_dir("download_two_fail");
  const ScopedEnv env("ENGINE_DATA_MIRROR", "http://127.0.0.1:1/");
  const testing::RunResult r =
      run_train({"--cpu", "--nproc", "2", "--dataset", "mnist", "--data-dir", dir + "/mnist", "--download",
                 "--epochs", "1", "--checkpoint-dir", ""});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("launcher: rank 0 (pid "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("exited with status 2; then rank 1 exited with status 3"), std::string::npos)
      << r.output;
  fs::remove_all(dir);
}

TEST(CnnTrainDownload, RefusedForDatasetsWithoutDownload) {
  for (const char* dataset : {"fashion-mnist", "folder:/nonexistent"}) {
    const testing::RunResult r = run_train({"--cpu", "--dataset", dataset, "--download", "--epochs", "1"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--download"), std::string::npos) << r.output;
  }
  const testing::RunResult r = run_train({"--cpu", "--dataset", "fashion-mnist", "--download"});
  EXPECT_NE(r.output.find("dataset-fashion-mnist"), std::string::npos) << r.output;
}

// The MNIST folder (tests/common/environment.h) when it holds the 4 official .gz files; else "".
std::string mnist_gz_source() {
  std::string dir = engine::testing::mnist_dir();
  if (dir.empty()) return {};
  for (const data::DownloadFile& f : data::dataset_files("mnist")) {
    if (!fs::exists(fs::path(dir) / f.name)) return {};
  }
  return dir;
}

TEST(CnnTrainDownload, TwoRanksDownloadMnistFromAMirrorOnce) {
  SKIP_WITHOUT_TOOL("curl");  // the downloader runs curl
  const std::string source = mnist_gz_source();
  if (source.empty())
    GTEST_SKIP() << "the MNIST .gz files are not here: set MNIST_DIR (tests/common/environment.h)";
  const std::string dir = testing::temp_dir("download_mirror");
  const std::string mirror = dir + "/mirror", data_dir = dir + "/data";
  fs::create_directories(mirror);
  for (const data::DownloadFile& f : data::dataset_files("mnist")) {
    fs::create_symlink(fs::path(source) / f.name, fs::path(mirror) / f.name);
  }
  const ScopedEnv env("ENGINE_DATA_MIRROR", "file://" + mirror + "/");
  const testing::RunResult r = run_train({"--cpu", "--nproc", "2", "--dataset", "mnist", "--data-dir",
                                          data_dir, "--download", "--limit-train", "64", "--limit-test", "32",
                                          "--epochs", "1", "--batch-size", "16", "--checkpoint-dir", ""});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const data::DownloadFile& f : data::dataset_files("mnist")) {
    const std::string path = data_dir + "/" + f.name;
    ASSERT_TRUE(fs::is_regular_file(path)) << path << "\n" << r.output;
    EXPECT_EQ(data::file_md5(path), f.md5) << path;
  }
  EXPECT_NE(r.output.find("cnn_train: downloaded mnist into " + data_dir + " (rank 0)"), std::string::npos)
      << r.output;
  EXPECT_EQ(part_files(dir), std::vector<std::string>{});
  EXPECT_NE(r.output.find("Test Acc: "), std::string::npos) << r.output;

  // A second run finds the files and downloads nothing.
  const testing::RunResult again =
      run_train({"--cpu", "--dataset", "mnist", "--data-dir", data_dir, "--download", "--limit-train", "64",
                 "--limit-test", "32", "--epochs", "1", "--checkpoint-dir", ""});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.output.find("downloading"), std::string::npos) << again.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace engine::apps
