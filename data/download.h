#pragma once
// Downloads the datasets that have an official download (CIFAR-10's binary tarball, MNIST's 4 idx .gz
// files) into a folder, the way scripts/download-data.sh does, for `cnn_train --download`.
//
// The table of files (names, URLs, md5s) must agree with scripts/download-data.sh: a CPU test
// (tests/cpu/cnn_train_download_test.cpp) parses the script and compares.
//
// Each file is fetched by `curl` run as a subprocess (no shell) into FILE.<pid>.part, checked with `md5sum`,
// then renamed into place, so a folder never holds a partial file under the real name. The environment
// variable ENGINE_DATA_MIRROR (a URL prefix such as https://mirror.example/datasets/ or file:///srv/mirror/)
// replaces each URL's directory: FILE is then fetched from the mirror alone.
// Fashion-MNIST is not here: it comes from Debian's dataset-fashion-mnist package.

#include <string>
#include <vector>

namespace engine::data {

struct DownloadFile {
  std::string name;               // the file's name in the dataset folder
  std::string md5;                // 32 lowercase hex digits
  std::vector<std::string> urls;  // tried in order (MNIST: the original site, then a mirror of it)
};

// True for "cifar10" and "mnist".
bool dataset_downloadable(const std::string& name);

// The files of a downloadable dataset. Throws engine::Error for any other name.
const std::vector<DownloadFile>& dataset_files(const std::string& name);

// The URLs `file` is fetched from: ENGINE_DATA_MIRROR + file.name when that variable is set, else file.urls.
std::vector<std::string> download_urls(const DownloadFile& file);

// True when `dir` holds what the dataset's reader looks for (CIFAR-10: the tarball, the
// cifar-10-batches-bin folder or its batch files, or `dir` is the tarball itself; MNIST: the 4 idx files,
// gzipped or not). Checks existence only; a damaged file is the reader's to report. Never throws.
bool dataset_present(const std::string& name, const std::string& dir);

// Creates `dir` and fetches each file of the dataset that is missing there or has the wrong md5. Throws
// engine::Error when curl or md5sum is missing, or when a file cannot be fetched from any of its URLs or
// has the wrong md5: the message names the URL(s), the file and how to fetch it by other means. No
// partial file is left behind.
void download_dataset(const std::string& name, const std::string& dir);

// The md5 of a file as 32 lowercase hex digits, from `md5sum` run as a subprocess. Throws engine::Error.
std::string file_md5(const std::string& path);

}  // namespace engine::data
