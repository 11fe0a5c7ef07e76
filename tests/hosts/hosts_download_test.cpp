// cnn_train --download on two hosts (tests/hosts/virtual_hosts.h), each with its own data folder (a node's
// local disk): local rank 0 of each host downloads MNIST from a mirror that host 0 serves over HTTP
// (python3 -m http.server, ENGINE_DATA_MIRROR) while the other rank of the host waits; each host ends with
// the four files, their md5s verified, each fetched once per host (the server's log says who asked), and the
// run trains on them. Skipped where the MNIST files or curl or python3 are not here.

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/download.h"
#include "dist/tcp_store.h"
#include "tests/common/environment.h"
#include "tests/hosts/multi_host_util.h"

namespace engine::apps {
namespace {

namespace fs = std::filesystem;
using engine::testing::VirtualHosts;
using testing::kWorld;
using testing::with_args;

// The MNIST folder (tests/common/environment.h) when it holds the 4 official .gz files; else "".
std::string mnist_gz_source() {
  std::string dir = engine::testing::mnist_dir();
  if (dir.empty()) return {};
  for (const data::DownloadFile& f : data::dataset_files("mnist")) {
    if (!fs::exists(fs::path(dir) / f.name)) return {};
  }
  return dir;
}

TEST(HostsDownload, EachHostsLocalRankZeroDownloadsFromTheMirrorOnce) {
  SKIP_WITHOUT_VIRTUAL_HOSTS();
  SKIP_WITHOUT_TOOL("curl");  // the downloader runs curl
  SKIP_WITHOUT_TOOL("python3");
  const std::string source = mnist_gz_source();
  if (source.empty())
    GTEST_SKIP() << "the MNIST .gz files are not here: set MNIST_DIR (tests/common/environment.h)";
  const std::string dir = testing::temp_dir("hosts_download");
  const std::string mirror = dir + "/mirror";
  fs::create_directories(mirror);
  for (const data::DownloadFile& f : data::dataset_files("mnist"))
    fs::create_symlink(fs::path(source) / f.name, fs::path(mirror) / f.name);

  VirtualHosts hosts;
  const std::string http_port = "8765";
  testing::LiveProcess server(hosts.on_host(0, {},
                                            {"python3", "-u", "-m", "http.server", http_port, "--bind",
                                             VirtualHosts::address(0), "--directory", mirror}));
  ASSERT_TRUE(server.wait_for("Serving HTTP", 30)) << server.output();

  const int port = dist::find_free_port();
  std::vector<std::unique_ptr<testing::LiveProcess>> ranks;
  for (int r = 0; r < kWorld; ++r) {
    const std::string data_dir = dir + "/" + VirtualHosts::hostname(r / testing::kRanksPerHost);
    ranks.push_back(testing::start_rank(
        hosts, r, port,
        {"--cpu", "--dataset", "mnist", "--data-dir", data_dir, "--download", "--limit-train", "64",
         "--limit-test", "32", "--epochs", "1", "--batch-size", "8", "--checkpoint-dir", ""},
        {"ENGINE_DATA_MIRROR=http://" + VirtualHosts::address(0) + ":" + http_port + "/"}));
  }
  for (int r = 0; r < kWorld; ++r)
    ASSERT_EQ(ranks[r]->finish(120), 0) << "rank " << r << "\n" << ranks[r]->output();
  EXPECT_NE(ranks[0]->output().find("Test Acc: "), std::string::npos) << ranks[0]->output();
  server.wait_for("(the log so far: a line that never comes)", 1.0);

  for (int h = 0; h < VirtualHosts::kHosts; ++h) {
    const std::string data_dir = dir + "/" + VirtualHosts::hostname(h);
    const int local0 = h * testing::kRanksPerHost;
    EXPECT_NE(ranks[local0]->output().find("cnn_train: downloaded mnist into " + data_dir + " (rank " +
                                           std::to_string(local0) + ")"),
              std::string::npos)
        << ranks[local0]->output();
    EXPECT_EQ(ranks[local0 + 1]->output().find("downloaded"), std::string::npos)
        << "local rank 1 waits, it does not download:\n"
        << ranks[local0 + 1]->output();
    for (const data::DownloadFile& f : data::dataset_files("mnist")) {
      const std::string path = data_dir + "/" + f.name;
      ASSERT_TRUE(fs::is_regular_file(path)) << path;
      EXPECT_EQ(data::file_md5(path), f.md5) << path;
      // One GET per host: python's log line starts with the client's address.
      EXPECT_EQ(testing::count_of(server.output(), VirtualHosts::address(h) + " - - "), 4u)
          << server.output();
      EXPECT_EQ(testing::count_of(server.output(), "\"GET /" + f.name + " HTTP/1.1\" 200"), 2u)
          << server.output();
    }
  }
}

}  // namespace
}  // namespace engine::apps
